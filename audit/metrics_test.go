package audit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tributary-io/tributary/audit"
)

// The audit's metrics stand for each topic and tier by the newest closed
// window; open windows and the producers' baseline are never judged.
func TestAuditMetrics(t *testing.T) {
	w := func(h int) time.Time { return time.Date(2024, 5, 1, h, 0, 0, 0, time.UTC) }
	row := func(tier string, h int, completeness float64, missing int64, status string) audit.Row {
		return audit.Row{Topic: "views", Tier: tier, WindowStart: w(h), WindowEnd: w(h + 1), Completeness: completeness, Missing: missing, Status: status}
	}
	rep := &audit.Report{Baseline: "producer", Rows: []audit.Row{
		row("producer", 1, 100, 0, audit.StatusOK),
		row("live", 1, 98, 20, audit.StatusMissing),
		row("live", 2, 100, 0, audit.StatusOK),
		row("live", 3, 50, 500, audit.StatusOpen), // inside the grace period
	}}
	c := audit.Metrics(func() *audit.Report { return rep }, 99.9)
	want := `
# HELP tributary_audit_completeness_ratio Completeness of the newest closed window: events the tier holds over events produced (duplicates not counted), 0 to 1.
# TYPE tributary_audit_completeness_ratio gauge
tributary_audit_completeness_ratio{tier="live",topic="views"} 1
# HELP tributary_audit_missing_events Events produced but missing in the tier, over the closed windows of the reported range.
# TYPE tributary_audit_missing_events gauge
tributary_audit_missing_events{tier="live",topic="views"} 20
# HELP tributary_audit_windows_below_threshold Closed windows of the reported range whose completeness is below the threshold.
# TYPE tributary_audit_windows_below_threshold gauge
tributary_audit_windows_below_threshold{tier="live",topic="views"} 1
# HELP tributary_audit_closed_window_end_timestamp_seconds Unix time the newest closed window of the topic and tier ends: completeness is judged up to here.
# TYPE tributary_audit_closed_window_end_timestamp_seconds gauge
tributary_audit_closed_window_end_timestamp_seconds{tier="live",topic="views"} 1.7145324e+09
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"tributary_audit_completeness_ratio", "tributary_audit_missing_events", "tributary_audit_windows_below_threshold", "tributary_audit_closed_window_end_timestamp_seconds"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
