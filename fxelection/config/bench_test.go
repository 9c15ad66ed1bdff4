package config_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/config"
)

// electionsDoc is a plain document of n elections on one shared backend.
func electionsDoc(n int) string {
	var b strings.Builder
	b.WriteString(`{"backends": {"m": ` + mem + `}, "elections": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name": "e` + strconv.Itoa(i) + `", "metadata": {"addr": "10.0.0.7:8080"}, "lease_duration": "15s", "backend": "m"}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// BenchmarkParse parses documents of 1 KB to 4 MB: plain ones of many
// elections, and the hostile shapes of issue 21 (refused or parsed; the
// time and memory per byte should stay flat as the size grows).
func BenchmarkParse(b *testing.B) {
	type shape struct {
		name string
		raw  string
		yaml bool
	}
	var shapes []shape
	for _, n := range []int{10, 100, 1000, 10_000, 40_000} {
		shapes = append(shapes, shape{"elections/" + strconv.Itoa(n), electionsDoc(n), false})
	}
	zeros := func(n int) string { return strings.TrimSuffix(strings.Repeat("0,", n), ",") }
	shapes = append(shapes,
		shape{"long-key-zeros/1MiBkey+1.4M", `{"` + strings.Repeat("k", 1<<20) + `": [` + zeros(1_400_000) + `]}`, false},
		shape{"long-key-zeros/64KiBkey+100k", `{"` + strings.Repeat("k", 64<<10) + `": [` + zeros(100_000) + `]}`, false},
		shape{"env-placeholders/40k", doc(`{"name": "a", "backend": ` + probe(`"hosts": [`+strings.TrimSuffix(strings.Repeat(`"{env.BIG}",`, 40_000), ",")+`]`) + `}`), false},
		shape{"yaml-laughs/59049", laughsYAML("{env.BIG}") + "elections:\n  - name: a\n    backend: {module: fxelection.backends.probe, journal: bench, tag: t, extra: *lx}\n", true},
	)
	var deep, closing strings.Builder
	for i := range 60 {
		deep.WriteString(`{"` + strings.Repeat(string(rune('a'+i%26)), 4096) + `": `)
		closing.WriteString("}")
	}
	shapes = append(shapes, shape{"deep-long-keys/265KB", deep.String() + "[" + zeros(10_000) + "]" + closing.String(), false})
	big := strings.Repeat("v", 100_000)
	l := config.Loader{LookupEnv: func(k string) (string, bool) { return big, k == "BIG" }}
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(s.raw)))
			b.ReportAllocs()
			for b.Loop() {
				if s.yaml {
					_, _ = l.ParseYAML([]byte(s.raw))
				} else {
					_, _ = l.Parse([]byte(s.raw))
				}
			}
		})
	}
}
