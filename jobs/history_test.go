package jobs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/loader"
)

// TestEntryKeepsTheRunCounts: a history entry carries every count of the
// run's summary, and reads back from its JSON line with each of them.
func TestEntryKeepsTheRunCounts(t *testing.T) {
	sum := &loader.Summary{Run: "r1", Committed: true, RunCounts: loader.RunCounts{
		Records: 7, Bytes: 700, InputBytes: 650, Files: 2, Errors: 1,
		Partitions: []loader.PartitionSummary{{Topic: "t", Partition: 3, From: 10, To: 17, End: 20, Records: 7, Errors: 1}},
		Lost:       []loader.LostRange{{Topic: "t", Partition: 3, From: 0, To: 9, Reason: "retention"}},
		Markers:    []string{"t/2026/12/05/01"},
		Stopped:    "max records",
	}}
	e := Entry{Job: "j", Outcome: Failed}
	e.fill(sum)
	if e.Run != "r1" || e.Outcome != Committed {
		t.Fatalf("run %q, outcome %q; want r1, %s", e.Run, e.Outcome, Committed)
	}
	line, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Entry
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.RunCounts, sum.RunCounts) {
		t.Fatalf("history line %s reads back as %+v, want %+v", line, back.RunCounts, sum.RunCounts)
	}
	for _, key := range []string{`"records":7`, `"input_bytes":650`, `"stopped":"max records"`} {
		if !strings.Contains(string(line), key) {
			t.Errorf("history line %s lacks %s", line, key)
		}
	}
}
