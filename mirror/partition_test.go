package mirror

import "testing"

// The committed offset must never pass a record the target has not
// acknowledged, whatever order the acknowledgements come in.
func TestAckWindow(t *testing.T) {
	type step struct {
		op     string // "add" offset, "ack" nth added record, "skip" offset
		arg    int64
		wantSf int64
	}
	tests := []struct {
		name  string
		start int64
		steps []step
	}{
		{"in order", 10, []step{
			{"add", 10, 10}, {"add", 11, 10}, {"ack", 0, 11}, {"ack", 1, 12},
		}},
		{"out of order waits for the gap", 0, []step{
			{"add", 0, 0}, {"add", 1, 0}, {"add", 2, 0},
			{"ack", 2, 0}, {"ack", 1, 0}, {"ack", 0, 3},
		}},
		{"skip with nothing in flight advances at once", 5, []step{
			{"skip", 5, 6}, {"skip", 6, 7}, {"add", 7, 7}, {"ack", 0, 8},
		}},
		{"skip behind an unacknowledged record waits for it", 0, []step{
			{"add", 0, 0}, {"skip", 1, 0}, {"add", 2, 0}, {"ack", 1, 0}, {"ack", 0, 3},
		}},
		{"duplicate ack is harmless", 0, []step{
			{"add", 0, 0}, {"ack", 0, 1}, {"ack", 0, 1}, {"add", 1, 1}, {"ack", 1, 2},
		}},
		{"offsets with a gap (retention) commit past it", 0, []step{
			{"add", 0, 0}, {"add", 7, 0}, {"ack", 1, 0}, {"ack", 0, 8},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := ackWindow{safe: tc.start}
			var seqs []uint64
			for i, s := range tc.steps {
				switch s.op {
				case "add":
					seqs = append(seqs, w.add(s.arg))
				case "ack":
					w.ack(seqs[s.arg])
				case "skip":
					w.skip(s.arg)
				}
				if w.safe != s.wantSf {
					t.Fatalf("step %d (%s %d): safe %d, want %d", i, s.op, s.arg, w.safe, s.wantSf)
				}
			}
		})
	}
}

func TestAckWindowReusesItsArray(t *testing.T) {
	w := ackWindow{}
	for i := range int64(100000) {
		w.ack(w.add(i))
	}
	if w.safe != 100000 || len(w.q) != 0 || cap(w.q) > 16 {
		t.Fatalf("safe %d, %d queued, capacity %d: the caught-up window should not grow", w.safe, len(w.q), cap(w.q))
	}
}
