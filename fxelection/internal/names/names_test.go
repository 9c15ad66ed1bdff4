package names_test

import (
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/names"
)

// FuzzDerivedNamesApart: for user-given names (backendkit.UserNameProblem
// accepts them), no derived name is a user-given name, and two derivations
// give the same name only from the same kind and the same names.
func FuzzDerivedNamesApart(f *testing.F) {
	f.Add("jobs", "0", 0, "jobs", "preempt", 1)
	f.Add("p", "x", 3, "p", "x", 3)
	f.Add("a", "shard/b", 1, "a/shard", "b", 0)
	f.Add("X", "member/0", 0, "X", "0", 0)
	f.Fuzz(func(t *testing.T, a, as string, ai int, b, bs string, bi int) {
		for _, s := range []string{a, as, b, bs} {
			if backendkit.UserNameProblem(s) != "" {
				return
			}
		}
		if ai < 0 || bi < 0 {
			return
		}
		type derived struct {
			kind, name, sub string
			i               int
			v               string
		}
		all := func(n, sub string, i int) []derived {
			return []derived{
				{"preempt", n, "", 0, names.Preempt(n)},
				{"slot", n, "", i, names.SemaphoreSlot(n, i)},
				{"shard", n, sub, 0, names.PoolShard(n, sub)},
				{"member", n, "", i, names.PoolMember(n, i)},
			}
		}
		xs, ys := all(a, as, ai), all(b, bs, bi)
		for _, x := range xs {
			if backendkit.UserNameProblem(x.v) == "" {
				t.Fatalf("derived %s name %q passes the user-name rule", x.kind, x.v)
			}
			if len(x.v) <= backendkit.MaxNameLen && backendkit.NameProblem(x.v) != "" {
				t.Fatalf("derived %s name %q refused by the record rule", x.kind, x.v)
			}
			for _, y := range ys {
				same := x.kind == y.kind && x.name == y.name && x.sub == y.sub && x.i == y.i
				if x.v == y.v && !same {
					t.Fatalf("%s(%q, %q, %d) and %s(%q, %q, %d) both give %q", x.kind, x.name, x.sub, x.i, y.kind, y.name, y.sub, y.i, x.v)
				}
			}
		}
	})
}
