package audit

import (
	"testing"
	"time"
)

// A monitoring event written before Count had "distinct" (read under its
// own writer schema, so the field is absent) still decodes, its counts'
// distinct unknown: old events stay readable after an upgrade.
func TestEventWithoutDistinctDecodes(t *testing.T) {
	w := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	e := &Event{Published: w, Host: "h", Tier: TierLive, Source: "s", Publisher: "p", Sequence: 1, Window: w, Size: DefaultWindow,
		Counts: []Count{{Topic: "t", Server: "fe-1", N: 7, Distinct: 5}}}
	n := e.native()
	for _, c := range n["counts"].([]any) {
		delete(c.(map[string]any), "distinct")
	}
	got, err := eventFromNative(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Counts) != 1 || got.Counts[0].N != 7 || got.Counts[0].Distinct != -1 {
		t.Errorf("old event's counts: %+v, want 7 events, distinct unknown (-1)", got.Counts)
	}
	// And the new field round-trips.
	if got, err := eventFromNative(e.native()); err != nil || got.Counts[0].Distinct != 5 {
		t.Errorf("new event: %+v, %v; want distinct 5", got, err)
	}
}
