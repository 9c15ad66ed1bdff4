// Package names derives the names of the library's own records from the
// names users give, in the one namespace no user-given name can reach.
//
// A user-given name never contains backendkit.ReservedNameChar ('#';
// backendkit.UserNameProblem). Every derived name is a user-given name, the
// reserved character, and a suffix of its own kind:
//
//	<election>#preempt     an election's preemption request (Candidacy.Preempt)
//	<semaphore>#<i>        slot i of a semaphore (decimal)
//	<pool>#shard/<shard>   a pool's shard (shard names are user-given too)
//	<pool>#member/<k>      a pool's member slot k (decimal)
//
// So the text before the first '#' is the user-given name, and the suffixes
// differ from their first byte or their first word on: no derived name is
// a user-given name, and no two derivations of different names or kinds
// give the same name.
package names

import (
	"strconv"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

const sep = string(backendkit.ReservedNameChar)

// Preempt names election's preemption request record.
func Preempt(election string) string { return election + sep + "preempt" }

// PreemptLen is how many bytes Preempt adds to an election's name.
const PreemptLen = len(sep + "preempt")

// SemaphoreSlot names the record of slot i of semaphore name.
func SemaphoreSlot(name string, i int) string { return name + sep + strconv.Itoa(i) }

// PoolShard names the election of shard of pool.
func PoolShard(pool, shard string) string { return pool + sep + "shard/" + shard }

// PoolMember names member slot k of pool.
func PoolMember(pool string, k int) string { return pool + sep + "member/" + strconv.Itoa(k) }

// AllowDerived is set by package fxelection when it initializes: given a
// *fxelection.Config, it lets that Config's Name be a derived name (one
// that contains the reserved character), which Config.Validate and New
// otherwise refuse. It is how the library's own packages (the pool's
// shard electors) make electors of derived names; being internal, it is
// no way for users past the rule.
var AllowDerived func(cfg any)
