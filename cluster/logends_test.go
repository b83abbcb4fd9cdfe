package cluster

import "testing"

// The controller's choice among the log ends reported for an offline
// partition (logends.go). Broker n runs in broker epoch 100+n; restarted,
// in 200+n.
func TestLongestLog(t *testing.T) {
	st := PartitionState{Leader: -1, LeaderEpoch: 7, ISR: []int32{1, 2, 3}}
	live := liveBrokers{1: 201, 2: 202, 3: 203}
	rep := func(id int32, end int64) LogEndReport {
		return LogEndReport{BrokerEpoch: 200 + int64(id), LeaderEpoch: 7, LogEnd: end}
	}
	for _, tt := range []struct {
		name     string
		reports  map[int32]LogEndReport
		replicas []int32
		live     liveBrokers
		want     int32
		ok       bool
		complete bool
	}{
		{"the longest of all three", map[int32]LogEndReport{1: rep(1, 90), 2: rep(2, 120), 3: rep(3, 100)}, []int32{1, 2, 3}, live, 2, true, true},
		{"one missing: the longest so far, incomplete", map[int32]LogEndReport{1: rep(1, 90), 3: rep(3, 100)}, []int32{1, 2, 3}, live, 3, true, false},
		{"none", nil, []int32{1, 2, 3}, live, 0, false, false},
		{"a tie goes to assignment order", map[int32]LogEndReport{1: rep(1, 100), 2: rep(2, 100), 3: rep(3, 90)}, []int32{2, 1, 3}, live, 2, true, true},
		{"a report of another leader epoch does not count", map[int32]LogEndReport{1: rep(1, 90), 2: {BrokerEpoch: 202, LeaderEpoch: 6, LogEnd: 500}, 3: rep(3, 100)}, []int32{1, 2, 3}, live, 3, true, false},
		{"a report of an older incarnation does not count", map[int32]LogEndReport{1: rep(1, 90), 2: {BrokerEpoch: 102, LeaderEpoch: 7, LogEnd: 500}, 3: rep(3, 100)}, []int32{1, 2, 3}, live, 3, true, false},
		{"a dead reporter does not count", map[int32]LogEndReport{1: rep(1, 90), 2: rep(2, 500)}, []int32{1, 2, 3}, liveBrokers{1: 201, 3: 203}, 1, true, false},
		{"a reporter outside the isr does not count", map[int32]LogEndReport{1: rep(1, 90), 2: rep(2, 100), 3: rep(3, 80), 4: {BrokerEpoch: 204, LeaderEpoch: 7, LogEnd: 999}}, []int32{1, 2, 3, 4}, liveBrokers{1: 201, 2: 202, 3: 203, 4: 204}, 2, true, true},
		{"an isr member that is no longer a replica is not waited for", map[int32]LogEndReport{1: rep(1, 90), 2: rep(2, 100)}, []int32{1, 2}, live, 2, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id, ok, complete := longestLog(st, tt.replicas, tt.live, tt.reports)
			if ok != tt.ok || complete != tt.complete || (ok && id != tt.want) {
				t.Fatalf("got %d ok=%v complete=%v, want %d ok=%v complete=%v", id, ok, complete, tt.want, tt.ok, tt.complete)
			}
		})
	}
}

func TestDecodeLogEndReportRefusesWhatNoBrokerWrites(t *testing.T) {
	for _, bad := range []string{`{"broker_epoch":0,"leader_epoch":1,"log_end":5}`, `{"broker_epoch":4,"leader_epoch":-1,"log_end":5}`,
		`{"broker_epoch":4,"leader_epoch":1,"log_end":-5}`, `[]`, `null`, ``} {
		if r, err := DecodeLogEndReport([]byte(bad)); err == nil {
			t.Errorf("%s decoded to %+v", bad, r)
		}
	}
	if r, err := DecodeLogEndReport([]byte(`{"broker_epoch":4294967310,"leader_epoch":7,"log_end":12584}`)); err != nil || r.LogEnd != 12584 {
		t.Errorf("a broker's report: %+v, %v", r, err)
	}
}
