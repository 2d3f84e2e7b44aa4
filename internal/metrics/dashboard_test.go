package metrics

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// dashboardFile is the Grafana dashboard over the pushed metrics.
var dashboardFile = filepath.Join("..", "..", "deploy", "grafana", "reportjob.json")

// notYetPushed are metric names the dashboard queries before this package
// pushes them: the statement delivery's (being added beside it). Each is
// reported; remove it from the list once it is pushed.
var notYetPushed = []string{"reportjob_delivery_failures"}

var metricNameRE = regexp.MustCompile(`\breportjob_[a-zA-Z0-9_]+`)

// dashboardQueries returns every query string of the dashboard: the
// panels' expr, and the template variables' query and definition.
func dashboardQueries(v any, key string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			dashboardQueries(e, k, out)
		}
	case []any:
		for _, e := range x {
			dashboardQueries(e, key, out)
		}
	case string:
		if key == "expr" || key == "query" || key == "definition" {
			*out = append(*out, x)
		}
	}
}

// TestDashboardMetrics: every metric the dashboard queries is one Push or
// PushVerify sends (or listed in notYetPushed), and every panel queries.
func TestDashboardMetrics(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	panels, _ := dash["panels"].([]any)
	if len(panels) == 0 {
		t.Fatalf("%s: no panels", dashboardFile)
	}
	for _, p := range panels {
		var qs []string
		dashboardQueries(p, "", &qs)
		if len(qs) == 0 || len(metricNameRE.FindAllString(qs[0], -1)) == 0 {
			t.Errorf("panel %v: no query of a reportjob metric", p.(map[string]any)["title"])
		}
	}

	g, srv := newGateway(t)
	if err := Push(context.Background(), srv.URL, sampleRun(true), srv.Client()); err != nil {
		t.Fatal(err)
	}
	if err := PushVerify(context.Background(), srv.URL, Verify{Job: "billing-report", End: t1, Periods: 1}, srv.Client()); err != nil {
		t.Fatal(err)
	}
	pushed := map[string]bool{}
	g.mu.Lock()
	for _, r := range g.reqs {
		for name := range r.families {
			pushed[name] = true
		}
	}
	g.mu.Unlock()

	var qs []string
	dashboardQueries(dash, "", &qs)
	used := map[string]bool{}
	for _, q := range qs {
		for _, name := range metricNameRE.FindAllString(q, -1) {
			used[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		switch {
		case pushed[name] && slices.Contains(notYetPushed, name):
			t.Errorf("%s is pushed now: take it off notYetPushed", name)
		case pushed[name]:
		case slices.Contains(notYetPushed, name):
			t.Logf("%s: queried by the dashboard, not pushed yet (notYetPushed)", name)
		default:
			t.Errorf("the dashboard queries %s, which is not pushed (pushed: %v)", name, slices.Sorted(maps.Keys(pushed)))
		}
	}
	for _, name := range []string{Lag, LastSuccessTimestamp, Restatements, Rejects, StatementsIssued, MonthsClosed, PeriodsRemaining} {
		if !used[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
}
