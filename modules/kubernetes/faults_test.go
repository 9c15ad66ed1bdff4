package kubelease_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// leaderLimit bounds waits for a leader: generous, for a loaded machine.
const leaderLimit = 30 * time.Second

// storeDown returns a backend on an API server of its own for the
// suite's StoreDown case: the Lease survives the API server's crash (its
// etcd keeps running), and a renewal after the restart writes a new
// resourceVersion.
func storeDown(t *testing.T) electiontest.DownStore {
	srv := testserver.NewKubeAPIServer(t, testserver.KubeAPIServerOptions{})
	cfg := restConfig(srv, srv.AdminToken())
	cfg.Timeout = 5 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := kubelease.New(c, kubelease.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return electiontest.DownStore{Backend: b, Kill: srv.Kill, Restart: srv.Restart, RenewWrites: true}
}

// proxied returns a Backend whose client reaches the shared API server
// through an electiontest.Proxy, closed at the end of the test.
func proxied(t *testing.T) (*kubelease.Backend, *electiontest.Proxy) {
	t.Helper()
	srv := server(t)
	p, err := electiontest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfg := restConfig(srv, srv.AdminToken())
	cfg.Host = "https://" + p.Addr() // the serving certificate names 127.0.0.1, whatever the port
	cfg.Timeout = 5 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := kubelease.New(c, kubelease.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, p
}

// TestConnectionCut: the leader's connections to the API server are cut
// (refused and reset); it steps down at its renew deadline, the other
// candidate takes over after the lease's duration with a higher term, and
// they never both lead; healed, the old leader follows.
func TestConnectionCut(t *testing.T) {
	e := electiontesting.Election(t)
	rec := &electiontesting.Recorder{}
	b, p := proxied(t)
	a := electiontesting.StartCandidate(t, b, e, "a", nil)
	a.Elector.AddObserver(rec)
	_, l := electiontesting.WaitLeader(t, []*electiontesting.Candidate{a}, leaderLimit)
	c := electiontesting.StartCandidate(t, newBackend(t, kubelease.Options{}), e, "c", nil)
	c.Elector.AddObserver(rec)

	p.Refuse()
	p.Sever()
	ev := electiontesting.WaitStopped(t, a, l.Term, leaderLimit)
	if ev.Reason != fxelection.ReasonDeadline {
		t.Errorf("step-down reason %q, want %q", ev.Reason, fxelection.ReasonDeadline)
	}
	_, l2 := electiontesting.WaitNewTerm(t, []*electiontesting.Candidate{c}, l.Term, leaderLimit)
	if l2.Holder != "c" || l2.Term <= l.Term {
		t.Fatalf("after the cut: %+v, want c with a term above %d", l2, l.Term)
	}
	p.Heal()
	electiontesting.WaitFor(t, leaderLimit, "the healed candidate follows c", func() bool {
		ld, ok := a.Elector.Leader()
		return ok && ld.Holder == "c"
	})
	if x, y, found := rec.Overlap(); found {
		t.Fatalf("two leaders at once: %+v and %+v", x, y)
	}
}

// TestLeaseEditedFromOutside: a label added to a held Lease does not cost
// the leader its lease (it keeps its term over several renewals); the
// Lease deleted from outside does, and the next leader's term is higher.
func TestLeaseEditedFromOutside(t *testing.T) {
	e := electiontesting.Election(t)
	a := electiontesting.StartCandidate(t, newBackend(t, kubelease.Options{}), e, "a", nil)
	_, l := electiontesting.WaitLeader(t, []*electiontesting.Candidate{a}, leaderLimit)
	leases := newClient(t).CoordinationV1().Leases("default")
	obj := getLease(t, "default", e)
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels["team"] = "billing"
	if _, err := leases.Update(ctxT(t), obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * electiontesting.FaultRetry) // several renewals
	if got, ok := a.Elector.Lease(); !ok || got.Term != l.Term {
		t.Fatalf("after a label was added: lease %+v (leading %v), want term %d still held", got, ok, l.Term)
	}
	if got := getLease(t, "default", e); got.Labels["team"] != "billing" {
		t.Errorf("the renewals dropped the label: %v", got.Labels)
	}

	if err := leases.Delete(ctxT(t), kubelease.LeaseName(e), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := electiontesting.WaitStopped(t, a, l.Term, leaderLimit)
	if ev.Reason != fxelection.ReasonLost {
		t.Errorf("step-down reason %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	_, l2 := electiontesting.WaitNewTerm(t, []*electiontesting.Candidate{a}, l.Term, leaderLimit)
	if l2.Term <= l.Term {
		t.Fatalf("term after the delete %d, want above %d", l2.Term, l.Term)
	}
}

// serviceAccountClient creates a ServiceAccount in ns with a Role of
// verbs on leases bound to it, and returns a client with its token (from
// the TokenRequest API).
func serviceAccountClient(t *testing.T, ns, name string, verbs ...string) kubernetes.Interface {
	t.Helper()
	return serviceAccountClientRules(t, ns, name, []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: verbs}})
}

// serviceAccountClientRules is serviceAccountClient with a Role of rules.
func serviceAccountClientRules(t *testing.T, ns, name string, rules []rbacv1.PolicyRule) kubernetes.Interface {
	t.Helper()
	admin := newClient(t)
	ctx := ctxT(t)
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      rules,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := restConfig(server(t), tok.Status.Token)
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRBAC: a ServiceAccount whose Role allows only get, create, update
// and watch on leases in its namespace (the Role of deploy/rbac.yaml) can
// campaign, lead, hand over and be woken; one without update gets a store failure that names the
// missing permission (never ErrLeaseLost or ErrLeaseHeld, which would make
// an elector act on it), and its token is in no error.
func TestRBAC(t *testing.T) {
	ns := fmt.Sprintf("rbac-%d", time.Now().UnixNano()%1e9)
	if _, err := newClient(t).CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	minimal := serviceAccountClientRules(t, ns, "elector", deployRole(t).Rules)
	bA, err := kubelease.New(minimal, kubelease.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bA.Close() })
	bB, err := kubelease.New(serviceAccountClientRules(t, ns, "elector-b", deployRole(t).Rules), kubelease.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bB.Close() })
	e := electiontesting.Election(t)
	rec := &electiontesting.Recorder{}
	a := electiontesting.StartCandidate(t, bA, e, "a", nil)
	a.Elector.AddObserver(rec)
	b := electiontesting.StartCandidate(t, bB, e, "b", nil)
	b.Elector.AddObserver(rec)
	leader, l := electiontesting.WaitLeader(t, []*electiontesting.Candidate{a, b}, leaderLimit)
	other := "a"
	if leader == a {
		other = "b"
	}
	if err := leader.Elector.ResignTo(ctxT(t), other); err != nil {
		t.Fatalf("ResignTo with the minimal Role: %v", err)
	}
	_, l2 := electiontesting.WaitNewTerm(t, []*electiontesting.Candidate{a, b}, l.Term, leaderLimit)
	if l2.Holder != other {
		t.Fatalf("after ResignTo(%s): %+v", other, l2)
	}
	if x, y, found := rec.Overlap(); found {
		t.Fatalf("two leaders at once: %+v and %+v", x, y)
	}

	// Without update: creating a Lease works, renewing it does not.
	noUpdate := serviceAccountClient(t, ns, "no-update", "get", "create", "watch")
	bC, err := kubelease.New(noUpdate, kubelease.Options{Namespace: ns, DisablePush: true})
	if err != nil {
		t.Fatal(err)
	}
	e2 := electiontesting.Election(t) + "-2"
	lc, err := bC.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e2, Identity: "c", Duration: time.Minute})
	if err != nil {
		t.Fatalf("Acquire (create) without update: %v", err)
	}
	_, err = bC.Renew(ctxT(t), lc)
	switch {
	case err == nil:
		t.Fatal("Renew without the update permission succeeded")
	case errors.Is(err, backendkit.ErrLeaseLost) || errors.Is(err, backendkit.ErrLeaseHeld) || !backendkit.IsStoreFailure(err):
		t.Fatalf("Renew without update: %v, want a store failure", err)
	case !strings.Contains(err.Error(), `cannot update resource "leases"`):
		t.Fatalf("Renew without update: %v, want the missing permission named", err)
	}
	t.Logf("without update: %v", err)
}
