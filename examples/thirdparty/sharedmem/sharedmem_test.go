package sharedmem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/examples/thirdparty/sharedmem"
	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func document(identity string) []byte {
	return []byte(`{"elections": [{"name": "jobs", "identity": "` + identity + `",
		"lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms",
		"backend": {"module": "fxelection.backends.sharedmem", "store": "cluster-a", "token": "{env.SHAREDMEM_TOKEN}"}}]}`)
}

func TestListedAfterImport(t *testing.T) {
	info, err := modkit.GetModule("fxelection.backends.sharedmem")
	if err != nil || !strings.Contains(info.Doc, "third-party") {
		t.Fatalf("GetModule = %+v, %v", info, err)
	}
}

// TestTwoAppsShareAStore: two fx apps, each from its own document, compete
// in one election through the third-party module; stopping the leader's app
// hands the lease to the other, and stopping both drops the store.
func TestTwoAppsShareAStore(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Setenv("SHAREDMEM_TOKEN", "s3cret-token")
	synctest.Test(t, func(t *testing.T) {
		var electors [2]*fxelection.Elector
		var apps [2]*fxtest.App
		ids := [2]string{"one", "two"}
		for i, id := range ids {
			opt, err := config.Load(document(id))
			if err != nil {
				t.Fatal(err)
			}
			apps[i] = fxtest.New(t, fx.NopLogger, opt, fx.Populate(fx.Annotate(&electors[i], fx.ParamTags(`name:"jobs"`))))
			apps[i].RequireStart()
		}
		synctest.Wait()
		if sharedmem.Users("cluster-a") != 2 {
			t.Fatalf("store users = %d, want 2", sharedmem.Users("cluster-a"))
		}
		// Both campaign from the same instant: either may win.
		if electors[0].IsLeader() == electors[1].IsLeader() {
			t.Fatalf("leaders: one=%v two=%v, want exactly one", electors[0].IsLeader(), electors[1].IsLeader())
		}
		lead, follow := 0, 1
		if electors[1].IsLeader() {
			lead, follow = 1, 0
		}
		apps[lead].RequireStop()
		synctest.Wait()
		if l, ok := electors[follow].Lease(); !ok || l.Holder != ids[follow] {
			t.Fatalf("%s did not take over: %+v", ids[follow], l)
		}
		apps[follow].RequireStop()
		if n := sharedmem.Users("cluster-a"); n != 0 {
			t.Fatalf("store users after stop = %d", n)
		}
	})
}

func TestWrongTokenFailsStartAndCleansUp(t *testing.T) {
	t.Setenv("SHAREDMEM_TOKEN", "right-token")
	opt, err := config.Load(document("one"))
	if err != nil {
		t.Fatal(err)
	}
	first := fx.New(fx.NopLogger, opt)
	if err := first.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer first.Stop(context.Background())

	t.Setenv("SHAREDMEM_TOKEN", "wrong-token")
	opt, err = config.Load(document("two"))
	if err != nil {
		t.Fatal(err)
	}
	second := fx.New(fx.NopLogger, opt)
	err = second.Start(context.Background())
	if !errors.Is(err, sharedmem.ErrTokenRejected) || strings.Contains(err.Error(), "wrong-token") ||
		!strings.Contains(err.Error(), "elections[0].backend: fxelection.backends.sharedmem provision:") {
		t.Fatalf("start with a wrong token: %v", err)
	}
	if n := sharedmem.Users("cluster-a"); n != 1 {
		t.Fatalf("store users = %d, want 1 (the failed app must not hold it)", n)
	}
}

func TestStrictSettings(t *testing.T) {
	for doc, want := range map[string]string{
		`{"module": "fxelection.backends.sharedmem"}`:                           `elections[0].backend.store: required`,
		`{"module": "fxelection.backends.sharedmem", "store": "a", "tokn": ""}`: `elections[0].backend.tokn: unknown key (did you mean "token"?)`,
		`{"module": "fxelection.backends.sharedmem", "store": "A B"}`:           `elections[0].backend: fxelection.backends.sharedmem: store: want lower-case letters, digits and dashes`,
	} {
		_, err := config.Parse([]byte(`{"elections": [{"name": "jobs", "backend": ` + doc + `}]}`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", doc, err, want)
		}
	}
}
