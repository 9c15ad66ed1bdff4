package doctest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
)

// readmeBlocks are the README's Go, JSON and YAML blocks, by the name of
// their marks: each shows all of a program (or document) that a test runs,
// or an excerpt of one, with a link to it.
var readmeBlocks = map[string]doctest.Block{
	"quickstart":     {Src: "examples/quickstart/main.go"},
	"withfx":         {Src: "examples/withfx/main.go"},
	"elections.json": {Src: "examples/configs/elections.json"},
	"sidecar.yaml":   {Src: "examples/exec/sidecar.yaml"},
	"configfile":     {Src: "examples/configfile/main.go"},
	"fencing":        {Src: "examples/fencing/main.go"},
	"metrics":        {Src: "examples/redis/main.go", Excerpt: true},
	"handover":       {Src: "examples/handover/main.go", Excerpt: true},
	"pool":           {Src: "examples/pool/main.go", Excerpt: true},
	"locks":          {Src: "examples/locks/main.go", Excerpt: true},
	"kubernetes":     {Src: "modules/kubernetes/example_test.go", Excerpt: true},
	// Checked in the kubernetes module (TestDeployManifests, TestRBAC).
	"kubernetes-rbac.yaml":       {Src: "modules/kubernetes/deploy/rbac.yaml"},
	"kubernetes-deployment.yaml": {Src: "modules/kubernetes/deploy/deployment.yaml"},
}

// TestReadmeBlocks: every Go, JSON and YAML block of the README is a
// program or document of the repository that a test compiles and runs,
// shown whole, or a short excerpt of one that links to it.
func TestReadmeBlocks(t *testing.T) {
	doctest.CheckReadme(t, "../../README.md", readmeBlocks)
}

// TestReadmeGuaranteesTable: the failover bound the README's guarantees
// table gives for each backend is stated, in the same words, by the
// package doc the row links to, whose doc tests check it against the code.
func TestReadmeGuaranteesTable(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(raw), "\n## Guarantees\n")
	if !ok {
		t.Fatal("README has no Guarantees section")
	}
	_, table, ok = strings.Cut(table, "\n| backend |")
	if !ok {
		t.Fatal("the Guarantees section has no table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	rows := strings.Split(table, "\n")
	header := cells("| backend |" + rows[0])
	col := slices.Index(header, "crashed leader replaced within")
	if col < 0 {
		t.Fatalf("no column %q in %q", "crashed leader replaced within", header)
	}
	link := regexp.MustCompile(`\]\(([^)]+)/doc\.go\)`)
	for _, row := range rows[2:] {
		c := cells(row)
		m := link.FindStringSubmatch(c[1])
		if m == nil {
			t.Errorf("row %q links no package doc (…/doc.go)", c[0])
			continue
		}
		doctest.DocSays(t, filepath.Join("../..", m[1]), strings.ReplaceAll(c[col], "`", ""))
	}
	if len(rows) < 2+11 {
		t.Errorf("the table has %d backends, want 11", len(rows)-2)
	}
}

// cells splits a Markdown table row into its trimmed cells.
func cells(row string) []string {
	parts := strings.Split(strings.Trim(strings.TrimSpace(row), "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// TestReadmeConfigTable: the defaults and limits the README's Config
// table states are fxelection's.
func TestReadmeConfigTable(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(raw), "\n| field | default | meaning |\n")
	if !ok {
		t.Fatal("README has no Config table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	row := map[string]string{}
	for _, r := range strings.Split(table, "\n")[1:] {
		c := cells(r)
		row[c[0]] = c[1] + " | " + c[2]
	}
	// The defaults, as New fills them in.
	e, err := fxelection.New(fxelection.Config{Name: "defaults"}, memory.New())
	if err != nil {
		t.Fatal(err)
	}
	def := e.Config()
	// The shortest RetryPeriod Config accepts.
	const minRetryPeriod = 10 * time.Millisecond
	accepts := func(p time.Duration) bool {
		return fxelection.Config{Name: "a", Timing: fxelection.Timing{LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: p}}.Validate() == nil
	}
	if !accepts(minRetryPeriod) || accepts(minRetryPeriod-1) {
		t.Fatalf("Config's shortest RetryPeriod is not %v", minRetryPeriod)
	}
	for field, want := range map[string]string{
		"`Name`":                              fmt.Sprintf("≤ %d bytes", backendkit.MaxNameLen),
		"`Metadata`":                          fmt.Sprintf("(≤ %d KiB)", backendkit.MaxMetadataBytes>>10),
		"`LeaseDuration`":                     fmt.Sprintf("%v | ", def.LeaseDuration),
		"`RenewDeadline`":                     fmt.Sprintf("%v | ", def.RenewDeadline),
		"`RetryPeriod`":                       fmt.Sprintf("%v | ", def.RetryPeriod),
		"`MaxBackoff`":                        fmt.Sprintf("%v | ", def.MaxBackoff),
		"`StopTimeout`":                       fmt.Sprintf("%v | ", def.StopTimeout),
		"`HealthInterval`, `HealthThreshold`": fmt.Sprintf("RetryPeriod, %d | ", healthDefaults().Health.Threshold),
	} {
		if !strings.Contains(row[field], want) {
			t.Errorf("the README's Config row %s (%q) does not say %q", field, row[field], want)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("every 1–%v × this; ≥ %v |", backoff.JitterFactor, minRetryPeriod),
		fmt.Sprintf("≤ %dh (`MaxRecordDuration`)", int(backendkit.MaxRecordDuration/time.Hour)),
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the README's Config table does not say %q", want)
		}
	}
}

// healthDefaults returns the Config New makes with a HealthCheck and
// nothing else set; its HealthInterval must be its RetryPeriod.
func healthDefaults() fxelection.Config {
	e, err := fxelection.New(fxelection.Config{Name: "defaults", Health: fxelection.Health{Check: func(context.Context) error { return nil }}}, memory.New())
	if err != nil {
		panic(err)
	}
	c := e.Config()
	if c.Health.Interval != c.RetryPeriod {
		panic("HealthInterval's default is not RetryPeriod")
	}
	return c
}
