package audit

import (
	"testing"
	"time"
)

// A monitoring event written before Count had "distinct" and the event
// "latency" (read under its own writer schema, so the fields are absent)
// still decodes, its counts' distinct unknown and no latency: old events
// stay readable after an upgrade.
func TestEventWithoutDistinctDecodes(t *testing.T) {
	w := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	e := &Event{Published: w, Host: "h", Tier: TierLive, Source: "s", Publisher: "p", Sequence: 1, Window: w, Size: DefaultWindow,
		Counts: []Count{{Topic: "t", Server: "fe-1", N: 7, Distinct: 5}}, Latency: []LatencyCount{{Topic: "t", Buckets: []int64{0, 7}}}}
	n := e.native()
	delete(n, "latency")
	for _, c := range n["counts"].([]any) {
		delete(c.(map[string]any), "distinct")
	}
	got, err := eventFromNative(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Counts) != 1 || got.Counts[0].N != 7 || got.Counts[0].Distinct != -1 || got.Latency != nil {
		t.Errorf("old event's counts: %+v, latency %v; want 7 events, distinct unknown (-1), no latency", got.Counts, got.Latency)
	}
	// And the new fields round-trip.
	if got, err := eventFromNative(e.native()); err != nil || got.Counts[0].Distinct != 5 || len(got.Latency) != 1 || got.Latency[0].Buckets[1] != 7 {
		t.Errorf("new event: %+v, %v; want distinct 5 and the latency histogram", got, err)
	}
}
