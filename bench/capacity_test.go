package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestCapacitySmoke runs the capacity test with short rows and two rounds
// on Tributary, on the baseline system (the current binary standing in for
// the build of BaselineCommit, which takes a minute to build) and on a Kafka
// whose scripts are missing, and checks every row: figures from
// acknowledged records only, one per round, ratios to Tributary, the
// broker's CPU per message, and the peer kept as not started.
func TestCapacitySmoke(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	rep, err := Run(context.Background(), Config{
		Systems:         []string{"tributary", baselineSystem, "kafka"},
		Tests:           []string{TestCapacity},
		Rounds:          2,
		CapacityTime:    300 * time.Millisecond,
		WorkDir:         t.TempDir(),
		TributaryBinary: testenv.Binary(t),
		BaselineBinary:  testenv.Binary(t),
		Scripts:         t.TempDir(), // no peer.sh: kafka cannot start
		SkipCeiling:     true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := len(capacityTemplate("x", ""))
	got := map[string]int{}
	for _, r := range rep.Rows {
		got[r.System]++
		if r.Test != TestCapacity && r.Test != TestCapacityKgo {
			t.Errorf("a capacity-only run gave a %s row: %+v", r.Test, r)
			continue
		}
		if r.Batch != capacityBatch || r.Connections < 1 || (r.Acks != 1 && r.Acks != AcksAll) {
			t.Errorf("row without its variant: %+v", r)
		}
		if r.System == "kafka" {
			if !strings.HasPrefix(r.Status, "not started: ") || r.OK() || r.Ratio != 0 {
				t.Errorf("kafka row without its peer: %+v", r)
			}
			continue
		}
		switch {
		case r.Status != "ok":
			t.Errorf("%s %s c%d a%d: status %q", r.System, r.Test, r.Connections, r.Acks, r.Status)
		case r.Messages < capacityBatch || r.Messages%capacityBatch != 0 && r.Test == TestCapacity:
			t.Errorf("%s %s c%d a%d: %d messages, want whole acknowledged batches", r.System, r.Test, r.Connections, r.Acks, r.Messages)
		case r.MsgsPerSec <= 0 || r.MBPerSec <= 0 || r.Seconds <= 0:
			t.Errorf("%s %s c%d a%d: %.0f msg/s, %.1f MB/s in %.2fs", r.System, r.Test, r.Connections, r.Acks, r.MsgsPerSec, r.MBPerSec, r.Seconds)
		case r.CPUMicrosPerMsg <= 0 && r.Test == TestCapacity && r.Acks == 1: // the busiest rows: whole clock ticks of CPU
			t.Errorf("%s %s c%d a%d: no CPU per message measured", r.System, r.Test, r.Connections, r.Acks)
		case len(r.Rounds) != 2 || r.Rounds[0] <= 0 || r.Rounds[1] <= 0:
			t.Errorf("%s %s c%d a%d: rounds %v, want two figures", r.System, r.Test, r.Connections, r.Acks, r.Rounds)
		case r.System == "tributary" && r.Ratio != 1, r.System == baselineSystem && r.Ratio <= 0:
			t.Errorf("%s %s c%d a%d: ratio to Tributary %v", r.System, r.Test, r.Connections, r.Acks, r.Ratio)
		}
	}
	for _, system := range []string{"tributary", baselineSystem, "kafka"} {
		if got[system] != want {
			t.Errorf("%s has %d capacity rows, want %d", system, got[system], want)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"CAPACITY:", "ONE KGO PRODUCER", baselineSystem, "trib÷", "cpu µs/msg", "not started"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table has no %q:\n%s", s, table.String())
		}
	}
	t.Logf("\n%s", table.String())
}

// A capacity row is the median round, and a variant that failed in any
// round is failed, not the median of the others; its share of the disk is
// of its payload MB/s.
func TestCapacityMedianRows(t *testing.T) {
	round := func(rates ...float64) []Row {
		var rows []Row
		for _, r := range rates {
			row := Row{System: "s", Test: TestCapacity, MsgsPerSec: r, MBPerSec: r * MessageSize / 1e6, Status: "ok"}
			if r == 0 {
				row.Status = "failed: boom"
			}
			rows = append(rows, row)
		}
		return rows
	}
	rows := medianRows([][]Row{round(300, 10), round(100, 20), round(200, 0)})
	if r := rows[0]; r.MsgsPerSec != 200 || len(r.Rounds) != 3 || r.Rounds[0] != 300 || r.Status != "ok" {
		t.Errorf("median row: %+v", r)
	}
	if r := rows[1]; r.OK() || !strings.Contains(r.Status, "round 3 of 3: failed: boom") || r.MsgsPerSec != 0 {
		t.Errorf("row failed in one round: %+v", r)
	}
	capacityDiskFraction(rows, &Ceiling{DiskMBPerSec: 0.08})
	if r := rows[0]; r.DiskFraction != 0.5 {
		t.Errorf("disk fraction of 0.04 MB/s over 0.08 MB/s: %v", r.DiskFraction)
	}
	if rows[1].DiskFraction != 0 {
		t.Errorf("a failed row got a disk fraction: %v", rows[1].DiskFraction)
	}
}
