package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// exported returns every series name the package can expose (histograms
// with their _bucket, _sum and _count series, not the bare name) and
// every label name (variable or constant), taken from the collectors
// themselves: New's, RegisterPool's and NewLockMetrics'.
func exported(t *testing.T) (names map[string]bool, histograms map[string]bool, labels map[string]bool) {
	t.Helper()
	names, histograms, labels = map[string]bool{}, map[string]bool{}, map[string]bool{"le": true}
	descRe := regexp.MustCompile(`fqName: "([^"]+)".*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}`)
	cols := append(newCollector().collectors(), newPoolCollector("p", nil))
	for _, col := range append(cols, newLockMetrics(LockMetricsOptions{}).collectors()...) {
		ch := make(chan *prometheus.Desc, 1)
		go func() { col.Describe(ch); close(ch) }()
		for d := range ch {
			m := descRe.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot parse %s", d)
			}
			for _, l := range strings.Split(m[3], ",") {
				if l != "" {
					labels[l] = true
				}
			}
			for _, l := range strings.Split(m[2], ",") {
				if name, _, _ := strings.Cut(l, "="); name != "" {
					labels[name] = true
				}
			}
			if _, ok := col.(*prometheus.HistogramVec); ok {
				histograms[m[1]] = true
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[m[1]+s] = true
				}
				continue
			}
			names[m[1]] = true
		}
	}
	return names, histograms, labels
}

type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Time struct{ From, To string } `json:"time"`
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *datasource              `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// TestDashboard parses dashboards/fxelection.json, checks it is a
// well-formed Grafana dashboard on a Prometheus data source variable, and
// that every fxelection_* name and every label its queries and query
// variables use is one this package exports.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile("dashboards/fxelection.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.UID) > 40 || d.SchemaVersion < 30 || d.Time.From == "" || len(d.Panels) == 0 {
		t.Errorf("dashboard header: title %q uid %q schemaVersion %d time %v panels %d",
			d.Title, d.UID, d.SchemaVersion, d.Time, len(d.Panels))
	}
	dsVar := ""
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && v.Query == "prometheus" {
			dsVar = v.Name
		}
	}
	if dsVar == "" {
		t.Fatal("no Prometheus data source variable in templating")
	}
	dsRefs := []string{"${" + dsVar + "}", "$" + dsVar}
	checkDS := func(where string, ds *datasource) {
		if ds == nil || ds.Type != "prometheus" || !slices.Contains(dsRefs, ds.UID) {
			t.Errorf("%s: datasource %+v, want the $%s variable", where, ds, dsVar)
		}
	}

	names, histograms, labels := exported(t)
	nameRe := regexp.MustCompile(`\bfxelection_[A-Za-z0-9_]+`)
	matcherRe := regexp.MustCompile(`\{([^}]*)\}`)
	matcherLabelRe := regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
	groupRe := regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	used := map[string]bool{}
	ids := map[int]bool{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if p.ID <= 0 || ids[p.ID] {
				t.Errorf("%s: missing or duplicate id", where)
			}
			ids[p.ID] = true
			g := p.GridPos
			if p.Type == "" || p.Title == "" || g.W < 1 || g.H < 1 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
				t.Errorf("%s: type %q gridPos %+v", where, p.Type, g)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			checkDS(where, p.Datasource)
			if len(p.Targets) == 0 {
				t.Errorf("%s: no targets", where)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.RefID == "" || refs[tg.RefID] || tg.Expr == "" {
					t.Errorf("%s: target refId %q (dup %v), expr %q", where, tg.RefID, refs[tg.RefID], tg.Expr)
				}
				refs[tg.RefID] = true
				checkDS(where+" target "+tg.RefID, tg.Datasource)
				found := nameRe.FindAllString(tg.Expr, -1)
				if len(found) == 0 {
					t.Errorf("%s: %q uses no fxelection metric", where, tg.Expr)
				}
				for _, n := range found {
					used[n] = true
					switch {
					case histograms[n]:
						t.Errorf("%s: %q uses histogram %s without _bucket/_sum/_count", where, tg.Expr, n)
					case !names[n]:
						t.Errorf("%s: %q uses %s, which the package does not export", where, tg.Expr, n)
					}
				}
				for _, m := range matcherRe.FindAllStringSubmatch(tg.Expr, -1) {
					for _, l := range matcherLabelRe.FindAllStringSubmatch(m[1], -1) {
						if !labels[l[1]] {
							t.Errorf("%s: %q matches on unknown label %q", where, tg.Expr, l[1])
						}
					}
				}
				for _, m := range groupRe.FindAllStringSubmatch(tg.Expr, -1) {
					for l := range strings.SplitSeq(m[1], ",") {
						if l = strings.TrimSpace(l); l != "" && !labels[l] {
							t.Errorf("%s: %q groups by unknown label %q", where, tg.Expr, l)
						}
					}
				}
			}
		}
	}
	walk(d.Panels)

	// Query variables: label_values(name, label) of an exported name and label.
	labelValuesRe := regexp.MustCompile(`^label_values\((fxelection_[A-Za-z0-9_]+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValuesRe.FindStringSubmatch(v.Definition)
		if m == nil || !names[m[1]] || !labels[m[2]] {
			t.Errorf("variable $%s: %q, want label_values of an exported name and label", v.Name, v.Definition)
		}
	}

	// The panels the issue asks for, by what they query.
	for _, n := range []string{
		NameIsLeader, NameTransitions, NameTerm, NameOperationDuration + "_bucket",
		NameBackendErrors, NameRenewMarginMin, NameHandOvers, NamePoolOwned, NamePoolTarget,
		NameLocksHeld, NameLockAcquisitions, NameLockWait + "_bucket", NameLockLost,
	} {
		if !used[n] {
			t.Errorf("dashboard does not use %s", n)
		}
	}
	for _, q := range []string{"histogram_quantile(0.5,", "histogram_quantile(0.99,"} {
		if !strings.Contains(string(raw), q) {
			t.Errorf("dashboard has no %s…) panel (renew latency, lock wait)", q)
		}
	}
}

// TestExportedNames checks the Name* constants against the collector.
func TestExportedNames(t *testing.T) {
	names, histograms, _ := exported(t)
	for _, n := range []string{NameIsLeader, NameTerm, NameTransitions, NameBackendErrors, NameLastRenew,
		NameRenewMarginMin, NameLeaderInfo, NameHealthy, NameHandOvers,
		NamePoolOwned, NamePoolTarget, NamePoolMembers, NamePoolMoves, NamePoolAcquired, NamePoolLost,
		NamePoolMismatched, NamePoolSlotRefused,
		NameLockAcquisitions, NameLocksHeld, NameLockLost} {
		if !names[n] {
			t.Errorf("%s not exported", n)
		}
	}
	for _, n := range []string{NameOperationDuration, NameRenewMargin, NameLockWait, NameLockHeld} {
		if !histograms[n] {
			t.Errorf("%s not an exported histogram", n)
		}
	}
	if got := len(names) - 2*len(histograms); got != 24 {
		t.Errorf("%d families, want 24 (update the README tables)", got)
	}
}
