package kubelease_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testtier"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// childEnv carries a killChild to the child process.
const childEnv = "FXELECTION_KUBE_INTEROP_CHILD"

// killChild is the elector the child process runs until it is killed.
type killChild struct {
	Kind   string `json:"kind"` // "fxelection" or "client-go"
	Server string `json:"server"`
	CA     []byte `json:"ca"`
	Token  string `json:"token"`
	Name   string `json:"name"`
	ID     string `json:"id"`
}

// TestInteropChild is TestClientGoSIGKILL's child; in any other run it
// returns at once.
func TestInteropChild(t *testing.T) {
	raw, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	var c killChild
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: c.Server, BearerToken: c.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA}, QPS: 100, Burst: 200}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	switch c.Kind {
	case "fxelection":
		b, err := kubelease.New(client, kubelease.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := fxelection.New(fxelection.Config{Name: c.Name, Identity: c.ID, Timing: fxelection.Timing{LeaseDuration: ioLease, RenewDeadline: ioRenew, RetryPeriod: ioRetry}}, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	case "client-go":
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{
				LeaseMeta: metav1.ObjectMeta{Name: c.Name, Namespace: "default"}, Client: client.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: c.ID},
			},
			LeaseDuration: ioLease, RenewDeadline: ioRenew, RetryPeriod: ioRetry,
			Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
		})
		if err != nil {
			t.Fatal(err)
		}
		go le.Run(context.Background())
	}
	select {} // until SIGKILL
}

// startChild runs kind's elector with identity id in a child process (this
// test binary running TestInteropChild), killed and reaped at the end of
// the test.
func startChild(t *testing.T, kind, name, id string) *exec.Cmd {
	t.Helper()
	srv := server(t)
	raw, err := json.Marshal(killChild{Kind: kind, Server: srv.URL(), CA: srv.CACert(), Token: srv.AdminToken(), Name: name, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInteropChild$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// holder reads the Lease's spec.holderIdentity ("" when none).
func holder(t *testing.T, c kubernetes.Interface, name string) string {
	l, err := c.CoordinationV1().Leases("default").Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestClientGoSIGKILL: a client-go elector in a process of its own holds
// the Lease; killed with SIGKILL, an fxelection elector takes over after
// the lease's duration, never before the kill; and the other way round.
func TestClientGoSIGKILL(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	admin := newClient(t)
	bound := ioLease + ioRetry*24/10 + ioSlack

	t.Run("client-go killed", func(t *testing.T) {
		name := fmt.Sprintf("kill-cg-%d", time.Now().UnixNano()%1e9)
		child := startChild(t, "client-go", name, "cg-child")
		waitFor(t, "the client-go child leads", time.Minute, func() bool { return holder(t, admin, name) == "cg-child" })
		rec := &electiontesting.Recorder{}
		fx, err := fxelection.New(fxelection.Config{Name: name, Identity: "fx", Timing: fxelection.Timing{LeaseDuration: ioLease, RenewDeadline: ioRenew, RetryPeriod: ioRetry}}, newBackend(t, kubelease.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		fx.AddObserver(rec)
		if err := fx.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fx.Stop(context.Background()) })
		never(t, "fxelection led while the client-go child renewed", ioLease, fx.IsLeader)
		killed := time.Now()
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "fxelection takes over from the killed client-go child", bound, fx.IsLeader)
		iv := rec.Intervals()
		if len(iv) == 0 || iv[0].Start.Before(killed) {
			t.Fatalf("fxelection's leadership %+v began before the kill at %v", iv, killed)
		}
		t.Logf("client-go child killed; fxelection led %v later (lease %v)", iv[0].Start.Sub(killed), ioLease)
	})

	t.Run("fxelection killed", func(t *testing.T) {
		name := fmt.Sprintf("kill-fx-%d", time.Now().UnixNano()%1e9)
		child := startChild(t, "fxelection", name, "fx-child")
		waitFor(t, "the fxelection child leads", time.Minute, func() bool { return holder(t, admin, name) == "fx-child" })
		rec := &electiontesting.Recorder{}
		cg := startClientGo(t, name, "cg", true, rec)
		never(t, "client-go led while the fxelection child renewed", ioLease, cg.leading.Load)
		killed := time.Now()
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "client-go takes over from the killed fxelection child", bound, cg.leading.Load)
		iv := rec.Intervals()
		if len(iv) == 0 || iv[0].Start.Before(killed) {
			t.Fatalf("client-go's leadership %+v began before the kill at %v", iv, killed)
		}
		t.Logf("fxelection child killed; client-go led %v later (lease %v)", iv[0].Start.Sub(killed), ioLease)
	})
}
