package kubelease_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/moduletest"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// caFile writes the API server's CA certificate to a file of the test's.
func caFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, server(t).CACert(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigModule: fxelection.backends.kubernetes with server, token (a
// placeholder) and ca_file provisions a client of its own and campaigns
// with it in its namespace.
func TestConfigModule(t *testing.T) {
	srv := server(t)
	settings := fmt.Sprintf(`{"module": "fxelection.backends.kubernetes", "server": %q, "token": %q, "ca_file": %q, "namespace": "default", "qps": 20, "burst": 40}`,
		srv.URL(), srv.AdminToken(), caFile(t))
	_, b, cleanup := moduletest.MustProvision[*kubelease.ConfigModule](t, ctxT(t), settings, "kubernetes")
	e := electiontesting.Election(t)
	cand := electiontesting.StartCandidate(t, b, e, "cfg", nil)
	electiontesting.WaitLeader(t, []*electiontesting.Candidate{cand}, leaderLimit)
	if got := getLease(t, "default", e); got.Spec.HolderIdentity == nil || *got.Spec.HolderIdentity != "cfg" {
		t.Errorf("Lease holder %v, want cfg", got.Spec.HolderIdentity)
	}
	if err := cand.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	moduletest.CheckCleanupCloses(t, ctxT(t), b, cleanup)
}

// TestConfigModuleKubeconfig: the module reads a kubeconfig file and the
// context named.
func TestConfigModuleKubeconfig(t *testing.T) {
	srv := server(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority: %q}
users:
- name: admin
  user: {token: %q}
contexts:
- name: other
  context: {cluster: test, user: nobody}
- name: test
  context: {cluster: test, user: admin}
current-context: other
`, srv.URL(), caFile(t), srv.AdminToken())
	if err := os.WriteFile(kc, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, b, _ := moduletest.MustProvision[*kubelease.ConfigModule](t, ctxT(t),
		fmt.Sprintf(`{"module": "fxelection.backends.kubernetes", "kubeconfig": %q, "context": "test"}`, kc), "kubernetes")
	e := electiontesting.Election(t)
	cand := electiontesting.StartCandidate(t, b, e, "kc", nil)
	electiontesting.WaitLeader(t, []*electiontesting.Candidate{cand}, leaderLimit)
}

// TestConfigModuleWrongToken: a wrong token is a store failure that does
// not show the token.
func TestConfigModuleWrongToken(t *testing.T) {
	const wrong = "wrong-TOKEN-never-shown-0123456789"
	srv := server(t)
	_, b, _ := moduletest.MustProvision[*kubelease.ConfigModule](t, ctxT(t),
		fmt.Sprintf(`{"module": "fxelection.backends.kubernetes", "server": %q, "token": %q, "ca_file": %q}`, srv.URL(), wrong, caFile(t)), "kubernetes")
	_, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: "wrong-token", Identity: "x", Duration: time.Minute})
	if err == nil || !backendkit.IsStoreFailure(err) || strings.Contains(err.Error(), wrong) {
		t.Fatalf("Acquire with a wrong token: %v, want a store failure without the token", err)
	}
	t.Logf("wrong token: %v", err)
}

// TestConfigModuleErrors: bad settings give errors naming the JSON path or
// the setting, and the token never appears in one.
func TestConfigModuleErrors(t *testing.T) {
	const secret = "s3cr3t-TOKEN-never-shown"
	env := map[string]string{"KUBE_TOKEN": secret}
	obj := func(rest string) string {
		return `{"module": "fxelection.backends.kubernetes", "token": "{env.KUBE_TOKEN}"` + rest + `}`
	}
	moduletest.CheckErrors(t, env, []moduletest.Case{
		{Settings: obj(`, "server": "http://h:1"`), Want: moduletest.Validated("server"), Is: kubelease.ErrInvalidOptions},
		{Settings: obj(`, "server": "https://u:` + secret + `@h:1"`), Want: moduletest.Validated("server: has user info"), Is: kubelease.ErrInvalidOptions},
		{Settings: `{"module": "fxelection.backends.kubernetes", "server": "https://h:1"}`, Want: moduletest.Validated("token"), Is: kubelease.ErrInvalidOptions},
		{Settings: obj(`, "server": "https://h:1", "kubeconfig": "/k"`), Want: moduletest.Validated("kubeconfig"), Is: kubelease.ErrInvalidOptions},
		{Settings: obj(`, "context": "c"`), Want: moduletest.Validated("context"), Is: kubelease.ErrInvalidOptions},
		{Settings: obj(`, "ca_file": "/ca.pem"`), Want: moduletest.Validated("ca_file"), Is: kubelease.ErrInvalidOptions},
		{Settings: obj(`, "namespace": "Not_A_Label"`), Want: moduletest.Validated("namespace"), Is: kubelease.ErrInvalidOptions},
		{Settings: obj(`, "qps": -1`), Want: moduletest.Validated("qps"), Is: kubelease.ErrInvalidOptions},
		{Settings: obj(`, "burst": -1`), Want: moduletest.Validated("burst"), Is: kubelease.ErrInvalidOptions},
		{Settings: obj(`, "max_in_flight": -1`), Want: moduletest.Validated("max_in_flight"), Is: kubelease.ErrInvalidOptions},
		{Settings: obj(`, "push": "no"`), Want: moduletest.At("push"), Is: config.ErrWrongType},
		{Settings: obj(`, "tokens": "x"`), Want: moduletest.At("tokens"), Is: config.ErrUnknownKey},
	}, secret)
}

// TestNewErrors: New refuses a nil client and bad options, naming the
// field.
func TestNewErrors(t *testing.T) {
	if _, err := kubelease.New(nil, kubelease.Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
	_, err := kubelease.New(newClient(t), kubelease.Options{Namespace: "a_b"})
	if !errors.Is(err, kubelease.ErrInvalidOptions) || !strings.Contains(err.Error(), "Options.Namespace") {
		t.Errorf("New with a bad namespace: %v", err)
	}
}

// TestConfigModuleKubeconfigNotShown: a kubeconfig that cannot be used —
// not YAML, or naming a context it lacks — fails the start without
// showing what the file holds (its token).
func TestConfigModuleKubeconfigNotShown(t *testing.T) {
	const token = "kubeconfig-TOKEN-never-shown-77"
	dir := t.TempDir()
	for name, body := range map[string]string{
		"not yaml":        "users:\n- name: a\n  user: {token: " + token + "\n  : : [",
		"no such context": "apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user: {token: " + token + "}\ncurrent-context: gone\n",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		m := &kubelease.ConfigModule{Kubeconfig: path}
		_, _, err := moduletest.Provision(t, ctxT(t), m)
		if err == nil {
			t.Errorf("%s: Provision succeeded", name)
			continue
		}
		if strings.Contains(err.Error(), token) {
			t.Errorf("%s: the error shows the kubeconfig's token: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}
