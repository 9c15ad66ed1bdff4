#!/usr/bin/env bash
# Builds tools into .cache/bin (git-ignored), named by version, from the
# wrapper modules here, pinned by their go.mod files:
#
#   kube-apiserver-<k8s.io/kubernetes version>   (internal/tools/kubeapiserver)
#   etcd-<go.etcd.io/etcd/server/v3 version>     (internal/tools/etcd)
#   staticcheck-<honnef.co/go/tools version>     (internal/tools/staticcheck),
#                                                 linked as .cache/bin/staticcheck
#
# internal/tools/build.sh [TOOL…] builds the TOOLs named (kube-apiserver,
# etcd, staticcheck); with none, the servers the Kubernetes backend's tests
# start (internal/testserver): kube-apiserver and etcd. A binary already
# there is kept. scripts/test.sh runs this.
set -euo pipefail
cd "$(dirname "$0")/../.."

# required GOMOD MODULE: the version GOMOD requires MODULE at.
required() {
	local v
	v=$(awk -v m="$2" '$1 == "require" { $1 = ""; $0 = $0 } $1 == m { print $2; exit }' "$1")
	[ -n "$v" ] || { echo "$1 does not require $2" >&2; exit 1; }
	echo "$v"
}
kube_version=$(required internal/tools/kubeapiserver/go.mod k8s.io/kubernetes)
etcd_version=$(required internal/tools/etcd/go.mod go.etcd.io/etcd/server/v3)
staticcheck_version=$(required internal/tools/staticcheck/go.mod honnef.co/go/tools)
bin=$PWD/.cache/bin
mkdir -p "$bin"

tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(kube-apiserver etcd)
# wanted TOOL: whether TOOL is to be built.
wanted() { [[ " ${tools[*]} " == *" $1 "* ]]; }
for t in "${tools[@]}"; do
	case $t in
	kube-apiserver | etcd | staticcheck) ;;
	*) echo "build.sh: unknown tool $t (kube-apiserver, etcd, staticcheck)" >&2; exit 2 ;;
	esac
done

if wanted kube-apiserver && [ ! -x "$bin/kube-apiserver-$kube_version" ]; then
	echo "==> building kube-apiserver $kube_version (internal/tools/kubeapiserver)"
	# The version a release build stamps (hack/lib/version.sh): /version
	# answers it instead of v0.0.0-master.
	minor=${kube_version#v*.} minor=${minor%%.*}
	pkg=k8s.io/component-base/version
	ldflags="-X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	(cd internal/tools/kubeapiserver && go build -ldflags "$ldflags" -o "$bin/kube-apiserver-$kube_version.tmp" .)
	mv "$bin/kube-apiserver-$kube_version.tmp" "$bin/kube-apiserver-$kube_version"
fi
if wanted etcd && [ ! -x "$bin/etcd-$etcd_version" ]; then
	echo "==> building etcd $etcd_version (internal/tools/etcd)"
	(cd internal/tools/etcd && go build -o "$bin/etcd-$etcd_version.tmp" .)
	mv "$bin/etcd-$etcd_version.tmp" "$bin/etcd-$etcd_version"
fi
if wanted staticcheck; then
	if [ ! -x "$bin/staticcheck-$staticcheck_version" ]; then
		echo "==> building staticcheck $staticcheck_version (internal/tools/staticcheck)"
		(cd internal/tools/staticcheck &&
			go build -o "$bin/staticcheck-$staticcheck_version.tmp" honnef.co/go/tools/cmd/staticcheck)
		mv "$bin/staticcheck-$staticcheck_version.tmp" "$bin/staticcheck-$staticcheck_version"
	fi
	# The name scripts/test.sh runs: a link to the pinned version.
	if [ "$(readlink "$bin/staticcheck" || true)" != "staticcheck-$staticcheck_version" ]; then
		ln -sfn "staticcheck-$staticcheck_version" "$bin/staticcheck"
	fi
fi
