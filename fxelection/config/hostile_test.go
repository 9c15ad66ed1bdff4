package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/fxelection/fxelection/fxelection/config"
)

// allocated returns how many bytes fn allocated (runtime.MemStats
// TotalAlloc: every goroutine's, so bounds must be generous).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// lotsBound is a generous bound on what parsing one hostile document may
// allocate: a few times MaxDocumentBytes plus the tree. Before the budget,
// these documents allocated gigabytes or ran out of memory.
const lotsBound = 512 << 20

// laughsYAML is the 413-byte shape: ten levels of aliases, each
// multiplying the one below by three, over one {file.PATH} placeholder,
// used where decoding accepts any value (the probe's "extra").
func laughsYAML(placeholder string) string {
	var b strings.Builder
	b.WriteString("l0: &l0 \"" + placeholder + "\"\n")
	prev := "l0"
	for i := 1; i <= 10; i++ {
		name := "l" + string(rune('0'+i%10))
		if i == 10 {
			name = "lx"
		}
		b.WriteString(name + ": &" + name + " [*" + prev + ", *" + prev + ", *" + prev + "]\n")
		prev = name
	}
	return b.String()
}

func TestBudgetYAMLLaughsOverFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "b"), []byte(strings.Repeat("s", config.MaxPlaceholderFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int32
	l := config.Loader{ReadFile: func(p string) ([]byte, error) { reads.Add(1); return os.ReadFile(filepath.Join(dir, p)) }}
	laughs := laughsYAML("{file.b}")
	// The aliases sit under unknown top-level keys: nothing there is expanded.
	var err error
	n := allocated(func() { _, err = l.ParseYAML([]byte(laughs + "elections: []\n")) })
	if !errors.Is(err, config.ErrUnknownKey) || errors.Is(err, config.ErrTooLarge) || reads.Load() != 0 {
		t.Fatalf("aliases under unknown keys: %d reads, error %v", reads.Load(), err)
	}
	// Used where decoding takes any value: 59,049 uses of 1 MiB, refused
	// once the expanded document passes the budget, the file read once.
	withUse := laughs + "elections:\n  - name: a\n    backend: {module: fxelection.backends.probe, journal: budget, tag: t, extra: *lx}\n"
	n += allocated(func() { _, err = l.ParseYAML([]byte(withUse)) })
	if !errors.Is(err, config.ErrTooLarge) {
		t.Fatalf("billion laughs over a 1 MiB file: %v", err)
	}
	if reads.Load() != 1 {
		t.Errorf("the file was read %d times, want once per document", reads.Load())
	}
	if n > lotsBound {
		t.Errorf("allocated %d MiB, want at most %d", n>>20, lotsBound>>20)
	}
}

func TestBudgetJSONManyEnvPlaceholders(t *testing.T) {
	var lookups atomic.Int32
	bigVal := strings.Repeat("v", 100_000)
	l := config.Loader{LookupEnv: func(k string) (string, bool) { lookups.Add(1); return bigVal, k == "BIG" }}
	hosts := strings.TrimSuffix(strings.Repeat(`"{env.BIG}",`, 40_000), ",")
	// Under a key the probe does not have: not expanded, not even looked up.
	unknown := doc(`{"name": "a", "backend": ` + probe(`"hostz": [`+hosts+`]`) + `}`)
	var err error
	n := allocated(func() { _, err = l.Parse([]byte(unknown)) })
	if !errors.Is(err, config.ErrUnknownKey) || lookups.Load() != 0 {
		t.Fatalf("placeholders under an unknown key: %d lookups, error %v", lookups.Load(), err)
	}
	// Under a known key: refused at the budget, the variable looked up once.
	known := doc(`{"name": "a", "backend": ` + probe(`"hosts": [`+hosts+`]`) + `}`)
	n += allocated(func() { _, err = l.Parse([]byte(known)) })
	if !errors.Is(err, config.ErrTooLarge) || lookups.Load() != 1 {
		t.Fatalf("40,000 × 100 KB: %d lookups, error %v", lookups.Load(), err)
	}
	if n > lotsBound {
		t.Errorf("allocated %d MiB, want at most %d", n>>20, lotsBound>>20)
	}
}

func TestBudgetHugeArrayUnderLongKey(t *testing.T) {
	// 3.8 MB: one 1 MiB key holding 1.4 million zeros.
	key := strings.Repeat("k", 1<<20)
	raw := `{"` + key + `": [` + strings.TrimSuffix(strings.Repeat("0,", 1_400_000), ",") + `]}`
	var err error
	n := allocated(func() { _, err = config.Parse([]byte(raw)) })
	if !errors.Is(err, config.ErrTooLarge) {
		t.Fatalf("1.4 million values: %v", err)
	}
	if len(err.Error()) > 1000 {
		t.Errorf("error is %d bytes long: keys must be shortened", len(err.Error()))
	}
	if n > lotsBound {
		t.Errorf("allocated %d MiB, want at most %d", n>>20, lotsBound>>20)
	}
}

func TestBudgetDeepLongKeys(t *testing.T) {
	// ~265 KB: 60 levels of 4 KiB keys over 10,000 values; every value's
	// path used to copy its parents' 240 KiB of keys (gigabytes in all).
	var open, closing strings.Builder
	for i := range 60 {
		open.WriteString(`{"` + strings.Repeat(string(rune('a'+i%26)), 4096) + `": `)
		closing.WriteString("}")
	}
	raw := open.String() + "[" + strings.TrimSuffix(strings.Repeat("0,", 10_000), ",") + "]" + closing.String()
	var err error
	n := allocated(func() { _, err = config.Parse([]byte(raw)) })
	if !errors.Is(err, config.ErrUnknownKey) {
		t.Fatalf("deep long keys: %v", err)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if len(line) > 1000 {
			t.Errorf("error line of %d bytes: keys must be shortened", len(line))
		}
	}
	if n > 64<<20 {
		t.Errorf("allocated %d MiB parsing %d KB, want at most 64", n>>20, len(raw)>>10)
	}
}

func TestBudgetLongIdentKeyShortened(t *testing.T) {
	_, err := config.Parse([]byte(`{"` + strings.Repeat("x", 1<<20) + `": 1, "elections": []}`))
	if !errors.Is(err, config.ErrUnknownKey) || len(err.Error()) > 1000 {
		t.Fatalf("error of %d bytes: %.200v", len(err.Error()), err)
	}
}

func TestOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, os.DevNull} {
		// A FIFO with no writer: the call returns (an error), it does not wait.
		_, err := config.Parse([]byte(doc(`{"name": "a", "identity": "{file.` + p + `}", "backend": ` + mem + `}`)))
		want := `elections[0].identity: placeholder: file "` + p + `": not a regular file`
		if !errors.Is(err, config.ErrPlaceholder) || !strings.Contains(err.Error(), want) {
			t.Errorf("{file.%s}: %v, want %q", p, err, want)
		}
		for _, name := range []string{p, fifo + ".yaml"} {
			if name != p {
				if err := syscall.Mkfifo(name, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := (config.Loader{}).ParseFile(name); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("ParseFile(%s): %v", name, err)
			}
			if _, err := (config.Loader{}).LoadFile(name); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("LoadFile(%s): %v", name, err)
			}
			os.Remove(fifo + ".yaml")
		}
	}
}
