package testserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubeDo sends one request and fails t on a transport error or a status
// other than want; it returns the decoded JSON answer.
func kubeDo(t *testing.T, k *KubeAPIServer, method, path, token string, body any, want int) map[string]any {
	t.Helper()
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status, resp, err := k.Do(ctx, method, path, token, data)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if status != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, status, want, resp)
	}
	var out map[string]any
	if err := json.Unmarshal(resp, &out); err != nil {
		t.Fatalf("%s %s: decode %q: %v", method, path, resp, err)
	}
	return out
}

func kubeLease(name, holder, rv string) map[string]any {
	meta := map[string]any{"name": name}
	if rv != "" {
		meta["resourceVersion"] = rv
	}
	return map[string]any{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
		"spec": map[string]any{"holderIdentity": holder, "leaseDurationSeconds": 10},
	}
}

func resourceVersion(t *testing.T, obj map[string]any) string {
	t.Helper()
	meta, _ := obj["metadata"].(map[string]any)
	rv, _ := meta["resourceVersion"].(string)
	if rv == "" {
		t.Fatalf("no metadata.resourceVersion in %v", obj)
	}
	return rv
}

// TestKubeAPIServer starts a real kube-apiserver and checks, with raw
// REST calls (no client-go), what the Kubernetes backend relies on: token
// authentication, RBAC, Lease create/get/update with optimistic
// concurrency (a stale resourceVersion gets 409), and Leases surviving a
// killed and restarted apiserver and etcd.
func TestKubeAPIServer(t *testing.T) {
	start := time.Now()
	k := NewKubeAPIServer(t, KubeAPIServerOptions{})
	t.Logf("kube-apiserver %s ready (etcd %s) in %v at %s", KubernetesVersion, KubeEtcdVersion, time.Since(start).Round(time.Millisecond), k.URL())

	admin := k.AdminToken()
	version := kubeDo(t, k, http.MethodGet, "/version", admin, nil, http.StatusOK)
	if version["gitVersion"] != KubernetesVersion && os.Getenv(KubeAPIServerEnv) == "" {
		t.Errorf("/version: gitVersion %v, want %s (internal/tools/build.sh stamps it)", version["gitVersion"], KubernetesVersion)
	}
	kubeDo(t, k, http.MethodGet, "/api/v1/namespaces/default", admin, nil, http.StatusOK)
	kubeDo(t, k, http.MethodGet, "/api/v1/namespaces/default", "", nil, http.StatusUnauthorized)
	kubeDo(t, k, http.MethodGet, "/api/v1/namespaces/default", "wrong-token", nil, http.StatusUnauthorized)

	ctx := context.Background()
	const ns = "fxelection"
	leases := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	if err := k.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	alice, bob := k.Token("alice"), k.Token("bob")
	kubeDo(t, k, http.MethodGet, leases, alice, nil, http.StatusForbidden) // RBAC: nothing granted yet
	if err := k.GrantLeases(ctx, "alice", ns); err != nil {
		t.Fatal(err)
	}
	if err := k.GrantLeases(ctx, "alice", ns); err != nil { // idempotent
		t.Fatalf("second GrantLeases: %v", err)
	}
	// RBAC takes effect as soon as the apiserver's informer sees the binding.
	WaitFor(t, time.Minute, "alice's grant", func() bool {
		status, _, err := k.Do(ctx, http.MethodGet, leases, alice, nil)
		return err == nil && status == http.StatusOK
	})

	created := kubeDo(t, k, http.MethodPost, leases, alice, kubeLease("leader", "a", ""), http.StatusCreated)
	rv1 := resourceVersion(t, created)
	kubeDo(t, k, http.MethodPost, leases, alice, kubeLease("leader", "a", ""), http.StatusConflict) // exists
	got := kubeDo(t, k, http.MethodGet, leases+"/leader", alice, nil, http.StatusOK)
	if rv := resourceVersion(t, got); rv != rv1 {
		t.Fatalf("GET resourceVersion %s, created %s", rv, rv1)
	}
	updated := kubeDo(t, k, http.MethodPut, leases+"/leader", alice, kubeLease("leader", "b", rv1), http.StatusOK)
	rv2 := resourceVersion(t, updated)
	if rv2 == rv1 {
		t.Fatalf("update kept resourceVersion %s", rv1)
	}
	stale := kubeDo(t, k, http.MethodPut, leases+"/leader", alice, kubeLease("leader", "c", rv1), http.StatusConflict)
	if stale["reason"] != "Conflict" {
		t.Fatalf("stale update: reason %v, want Conflict: %v", stale["reason"], stale)
	}
	kubeDo(t, k, http.MethodGet, leases+"/leader", bob, nil, http.StatusForbidden)
	kubeDo(t, k, http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/default/leases", alice, nil, http.StatusForbidden)

	// The apiserver killed and restarted on the same port, the same etcd.
	addr := k.URL()
	if err := k.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Do(ctx, http.MethodGet, leases+"/leader", alice, nil); err == nil {
		t.Fatal("a request to the killed apiserver succeeded")
	}
	restart := time.Now()
	if err := k.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver restarted in %v", time.Since(restart).Round(time.Millisecond))
	if k.URL() != addr {
		t.Fatalf("URL %s after Restart, was %s", k.URL(), addr)
	}
	got = kubeDo(t, k, http.MethodGet, leases+"/leader", alice, nil, http.StatusOK)
	if rv := resourceVersion(t, got); rv != rv2 {
		t.Fatalf("resourceVersion %s after restart, want %s", rv, rv2)
	}

	// etcd killed: the apiserver fails requests until etcd is back.
	if err := k.Etcd().Kill(); err != nil {
		t.Fatal(err)
	}
	if err := k.Etcd().Restart(); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 60*time.Second, "the apiserver after an etcd restart", func() bool {
		status, _, err := k.Do(ctx, http.MethodGet, leases+"/leader", alice, nil)
		return err == nil && status == http.StatusOK
	})
	kubeDo(t, k, http.MethodPut, leases+"/leader", alice, kubeLease("leader", "d", rv2), http.StatusOK)
}

func TestKubeAPIServerNotInstalled(t *testing.T) {
	t.Setenv(KubeAPIServerEnv, filepath.Join(t.TempDir(), "kube-apiserver"))
	_, err := StartKubeAPIServer(KubeAPIServerOptions{})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("StartKubeAPIServer with a missing binary: %v, want ErrNotInstalled", err)
	}
}

// TestKubeToolVersions checks that the versions this package names are
// the ones the tool modules build, and that every k8s.io module there is
// at the one Kubernetes release.
func TestKubeToolVersions(t *testing.T) {
	staging := "v0" + strings.TrimPrefix(KubernetesVersion, "v1") // v1.37.2 -> v0.37.2
	for _, c := range []struct{ dir, want string }{
		{"kubeapiserver", "k8s.io/kubernetes " + KubernetesVersion},
		{"etcd", "go.etcd.io/etcd/server/v3 " + KubeEtcdVersion},
	} {
		path := filepath.Join("..", "tools", c.dir, "go.mod")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
			if strings.HasPrefix(line, c.want+" ") || line == c.want {
				found = true
			}
			// k8s.io/x => k8s.io/x v0.37.2
			if f := strings.Fields(line); len(f) == 4 && f[1] == "=>" && strings.HasPrefix(f[0], "k8s.io/") && f[3] != staging {
				t.Errorf("%s: %s, want every k8s.io module replaced at %s", path, line, staging)
			}
		}
		if !found {
			t.Errorf("%s does not require %s", path, c.want)
		}
	}
}

// BenchmarkStartKubeAPIServer measures a start (etcd and kube-apiserver,
// to /readyz) and a Close.
func BenchmarkStartKubeAPIServer(b *testing.B) {
	for b.Loop() {
		k, err := StartKubeAPIServer(KubeAPIServerOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := k.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
