#!/usr/bin/env bash
# The one test command: installs what the tests need, then runs gofmt, vet,
# staticcheck and the tests with the race detector against real servers
# started by the tests themselves (internal/testserver) on free loopback
# ports. The tests come in three tiers (internal/testtier):
#
#   ./scripts/test.sh            # default tier: unit, fake-time, contract, a smoke per store
#   ./scripts/test.sh --e2e      # default + e2e: end-to-end features, examples, interop (CI)
#   ./scripts/test.sh --soak     # soak: chaos on every store, pool kills and storms, long fuzzing
#   ./scripts/test.sh ./modules/redis/...   # some packages (any tier)
#
# Every phase (gofmt, vet, staticcheck, go test -race, fuzzing) runs even
# after one fails; the run ends with the failed tests and the line
# "N passed, N failed, N skipped", and exits non-zero if anything failed.
# Under CI=true a test whose server binary is missing fails instead of skipping.
#
# Knobs (environment): FUZZTIME (inputs or time per fuzz target; the soak
# tier fuzzes, the others run the seed corpora only), TEST_P and
# TEST_PARALLEL (go test -p and -parallel, default 4),
# FXELECTION_CHAOS_DURATION and FXELECTION_CHAOS_SEED (a longer or replayed
# chaos run).
#
# Servers: redis-server, PostgreSQL, memcached, nats-server and ZooKeeper
# (Debian packages), MinIO (go install), Azurite (npm), DynamoDB Local (npm,
# Java), kube-apiserver and its etcd (internal/tools/build.sh: go build of
# pinned wrapper modules).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*"; }

# The tier: flags first, then packages.
tier=default
while [ $# -gt 0 ]; do
	case "$1" in
	--e2e) tier=e2e; shift ;;
	--soak) tier=soak; shift ;;
	--) shift; break ;;
	-*) echo "test.sh: unknown flag $1 (--e2e, --soak)" >&2; exit 2 ;;
	*) break ;;
	esac
done
case $tier in
default) export FXELECTION_TEST_TIERS=default ;;
e2e) export FXELECTION_TEST_TIERS=default,e2e ;;
soak) export FXELECTION_TEST_TIERS=soak ;;
esac

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=
apt_install() {
	if [ -z "$apt_updated" ]; then
		as_root apt-get update -qq
		apt_updated=1
	fi
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# Redis: the tests start private redis-server processes.
if ! command -v redis-server >/dev/null; then
	log "installing redis-server"
	apt_install redis-server
fi

# PostgreSQL: the tests run initdb + postgres in temp dirs (as the postgres
# user when root). Debian keeps the binaries out of PATH.
if ! command -v initdb >/dev/null; then
	pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
	if [ -z "$pgbin" ]; then
		log "installing postgresql"
		apt_install postgresql
		pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
	fi
	export PATH="$pgbin:$PATH"
fi

# memcached: the cache backend's memcached adapter tests start private
# memcached processes. Debian package, pinned (bookworm's version).
MEMCACHED_VERSION='1.6.18*'
if ! command -v memcached >/dev/null; then
	log "installing memcached $MEMCACHED_VERSION"
	apt_install "memcached=$MEMCACHED_VERSION"
fi

# NATS: the cache backend's NATS adapter tests start private nats-server -js
# processes. Debian package, pinned (bookworm's version); Debian puts it in
# /usr/sbin, which the tests also search.
NATS_SERVER_VERSION='2.9.10*'
if ! command -v nats-server >/dev/null && [ ! -x /usr/sbin/nats-server ]; then
	log "installing nats-server $NATS_SERVER_VERSION"
	apt_install "nats-server=$NATS_SERVER_VERSION"
fi

# ZooKeeper: the zookeeper module's tests start private standalone servers
# with java on Debian's class path (/usr/share/java). Debian package, pinned
# (bookworm's version); it brings a Java runtime.
ZOOKEEPER_VERSION='3.8.0-11+deb12u*'
if [ ! -f /usr/share/java/zookeeper.jar ] || ! command -v java >/dev/null; then
	log "installing zookeeper $ZOOKEEPER_VERSION"
	apt_install "zookeeper=$ZOOKEEPER_VERSION"
fi

# MinIO: the S3 backend's tests start a real MinIO server. Built from source
# through the Go module proxy (about 3 minutes cold), pinned for repeatable
# runs; found on PATH or in $(go env GOPATH)/bin.
MINIO_MODULE=github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
if ! command -v minio >/dev/null && [ ! -x "$(go env GOPATH)/bin/minio" ]; then
	log "building minio server (go install $MINIO_MODULE)"
	go install "$MINIO_MODULE"
fi

# Azurite: the Azure Blob backend's tests start a real Azurite emulator,
# installed with npm into .cache/azurite (git-ignored), pinned.
AZURITE_VERSION=3.35.0
if [ -z "${FXELECTION_AZURITE:-}" ] && [ ! -x .cache/azurite/node_modules/.bin/azurite-blob ]; then
	if ! command -v npm >/dev/null; then
		log "installing nodejs and npm"
		apt_install nodejs npm
	fi
	log "installing azurite $AZURITE_VERSION (npm)"
	npm install --no-audit --no-fund --silent --prefix .cache/azurite "azurite@$AZURITE_VERSION" >/dev/null
fi

# Kubernetes: the Kubernetes backend's tests start a real kube-apiserver and
# its etcd (internal/testserver), built from source through the Go module
# proxy into .cache/bin (git-ignored) by internal/tools/build.sh, pinned by
# the wrapper modules' go.mod files (internal/tools/kubeapiserver: k8s.io/
# kubernetes; internal/tools/etcd), the versions in the binaries' names.
# About 6 minutes cold on two cores, nothing to do once built.
if [ -z "${FXELECTION_KUBE_APISERVER:-}${FXELECTION_KUBE_ETCD:-}" ]; then
	internal/tools/build.sh
fi

# DynamoDB Local: the DynamoDB backend's tests start AWS's DynamoDB Local
# (Java), shipped in the npm package amplify-dynamodb-simulator, installed
# into .cache/dynamodb (git-ignored), pinned.
DYNAMODB_SIMULATOR_VERSION=2.9.30
if ! command -v java >/dev/null; then
	log "installing java (openjdk-17-jre-headless)"
	apt_install openjdk-17-jre-headless
fi
if [ -z "${FXELECTION_DYNAMODB_LOCAL:-}" ] &&
	[ ! -f .cache/dynamodb/node_modules/amplify-dynamodb-simulator/emulator/DynamoDBLocal.jar ]; then
	if ! command -v npm >/dev/null; then
		log "installing nodejs and npm"
		apt_install nodejs npm
	fi
	log "installing DynamoDB Local (amplify-dynamodb-simulator $DYNAMODB_SIMULATOR_VERSION, npm)"
	npm install --no-audit --no-fund --silent --prefix .cache/dynamodb \
		"amplify-dynamodb-simulator@$DYNAMODB_SIMULATOR_VERSION" >/dev/null
fi

args=("$@")
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)
TEST_P=${TEST_P:-4}
TEST_PARALLEL=${TEST_PARALLEL:-4}

# Nested Go modules (their own go.mod, so outside the root's ./...): vet,
# tests and fuzzing run inside them. etcd's tests embed etcd itself: nothing
# to install; dynamodb's start DynamoDB Local, zookeeper's the ZooKeeper and
# kubernetes's a kube-apiserver installed above. A package argument under one
# (./modules/etcd/...) runs there.
nested=(modules/etcd modules/kubernetes modules/dynamodb modules/zookeeper)
root_pkgs=()
declare -A sub_pkgs=()
for p in "${pkgs[@]}"; do
	for m in "${nested[@]}"; do
		case "${p#./}" in "$m" | "$m"/*)
			rel=${p#./}; rel=${rel#"$m"}
			sub_pkgs[$m]+="./${rel#/} "
			continue 2 ;;
		esac
	done
	root_pkgs+=("$p")
done
if [ $# -eq 0 ] || [[ " ${pkgs[*]} " == *" ./... "* ]]; then
	for m in "${nested[@]}"; do sub_pkgs[$m]="./..."; done
fi
# each CMD ARGS…: CMD ARGS… on the root's packages, then in each nested
# module; fails if any of them failed.
each() {
	local rc=0
	if [ ${#root_pkgs[@]} -gt 0 ]; then "$@" "${root_pkgs[@]}" || rc=$?; fi
	for m in "${!sub_pkgs[@]}"; do
		# shellcheck disable=SC2086 # the list is space-separated on purpose
		(cd "$m" && "$@" ${sub_pkgs[$m]}) || rc=$?
	done
	return "$rc"
}
# go_each ARGS…: go ARGS… on the root's packages, then in each nested module.
go_each() { each go "$@"; }

# Every phase runs even after one fails; testreport (internal/testreport)
# turns `go test -json` into a package line per package, a failed test's
# output when it fails, a progress line when nothing was printed for 30 s,
# and ends with the failures and the line "N passed, N failed, N skipped".
mkdir -p .cache/bin
go build -o .cache/bin/testreport ./internal/testreport
# staticcheck: pinned by the wrapper module internal/tools/staticcheck (its
# go.mod), built by internal/tools/build.sh into .cache/bin once per version.
internal/tools/build.sh staticcheck

phase() { log "$1"; echo "##testreport phase $1"; }
failed() { echo "##testreport exit $1 $2"; }

run_phases() {
	phase "go $(go env GOVERSION): gofmt"
	# shellcheck disable=SC2046 # one file name per word
	unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*'))
	if [ -n "$unformatted" ]; then
		echo "gofmt needed on:"; echo "$unformatted"
		echo "##testreport fail gofmt"
	fi

	phase "go vet"
	go_each vet || failed "go vet" $?

	# staticcheck's checks, each exception justified where it is made
	# (staticcheck.conf at a module's root, //lint:ignore at the line).
	phase "staticcheck"
	each "$PWD/.cache/bin/staticcheck" || failed "staticcheck" $?

	# The tests mostly wait (for leases to expire, faults to end, servers
	# to start), so more packages (-p) and parallel conformance cases
	# (-parallel) run at once than there are cores; every test must pass
	# with the cores oversubscribed anyway. The nested modules run beside
	# the root's packages; their output follows the root's.
	phase "go test -race, tiers $FXELECTION_TEST_TIERS (-p $TEST_P -parallel $TEST_PARALLEL)"
	testflags=(test -race -count=1 -timeout 40m -json -p "$TEST_P" -parallel "$TEST_PARALLEL")
	# The soak tier is the tests named TestSoak… (and long fuzzing below).
	if [ "$tier" = soak ]; then testflags+=(-run '^TestSoak'); fi
	nested_out=$(mktemp -d)
	for m in "${!sub_pkgs[@]}"; do
		# shellcheck disable=SC2086 # the list is space-separated on purpose
		( (cd "$m" && go "${testflags[@]}" ${sub_pkgs[$m]}) || failed "go test -race ($m)" $? ) \
			>"$nested_out/${m//\//_}.json" 2>&1 &
	done
	# go test starts packages in the order given: the slowest first, so
	# that none of them ends the phase alone.
	race_pkgs=("${root_pkgs[@]}")
	if [[ " ${root_pkgs[*]} " == *" ./... "* ]]; then
		race_pkgs=(./modules/blob ./modules/s3 ./fxelection "${root_pkgs[@]}")
	fi
	if [ ${#race_pkgs[@]} -gt 0 ]; then
		go "${testflags[@]}" "${race_pkgs[@]}" || failed "go test -race" $?
	fi
	wait
	cat "$nested_out"/*.json 2>/dev/null
	rm -rf "$nested_out"

	# Fuzzing: the seed corpus of every Fuzz target runs above as a unit
	# test (default tier); the soak tier also fuzzes each target for
	# FUZZTIME (default 100000x: that many inputs; FUZZTIME=2000000x or 10m
	# to hunt for longer; FUZZTIME in another tier fuzzes there too). The
	# default is a count, not a
	# duration: Go 1.26's fuzz coordinator can fail a duration-bounded run
	# with "context deadline exceeded" when a starved worker is mid-input at
	# the deadline (golang/go#75804, fixed in Go 1.27), and a count has no
	# deadline to race.
	fuzztime=${FUZZTIME:-0}
	if [ "$tier" = soak ]; then fuzztime=${FUZZTIME:-100000x}; fi
	if [ "$fuzztime" != 0 ] && [ ${#args[@]} -eq 0 ]; then
		targets=$(git grep -E '^func Fuzz[A-Za-z0-9_]+\(' -- '*_test.go' 2>/dev/null ||
			grep -rE '^func Fuzz[A-Za-z0-9_]+\(' --include='*_test.go' . || true)
		phase "go test -fuzz: $(printf '%s\n' "$targets" | grep -c . || true) targets, $fuzztime each"
		while IFS= read -r line; do
			[ -n "$line" ] || continue
			file=${line%%:*}
			name=$(printf '%s\n' "${line#*:}" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(.*/\1/')
			dir=$(dirname "$file") mod=.
			for m in "${nested[@]}"; do
				case "$dir" in "$m" | "$m"/*) mod=$m dir=${dir#"$m"} dir=${dir#/} dir=${dir:-.} ;; esac
			done
			log "fuzz $name ($(dirname "$file"))"
			(cd "$mod" && go test -json -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "./$dir") ||
				failed "fuzz $name" $?
		done <<<"$targets"
	fi
}

set +e
run_phases 2>&1 | .cache/bin/testreport
exit "${PIPESTATUS[1]}"
