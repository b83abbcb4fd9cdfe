package cluster

import (
	"fmt"
	"testing"
)

// With racks, each partition's replicas sit in as many racks as they
// can, and leadership stays even.
func TestSpreadReplicasOverRacks(t *testing.T) {
	tests := []struct {
		name      string
		brokers   []Broker
		rf        int
		wantRacks int // distinct racks per partition
	}{
		{"three racks of two, rf 3", []Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}, {ID: 4, Rack: "b"}, {ID: 5, Rack: "c"}, {ID: 6, Rack: "c"}}, 3, 3},
		{"ids in rack order, rf 2", []Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "a"}, {ID: 4, Rack: "b"}, {ID: 5, Rack: "b"}, {ID: 6, Rack: "b"}}, 2, 2},
		{"uneven racks, rf 2", []Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "a"}, {ID: 4, Rack: "b"}}, 2, 2},
		{"more replicas than racks", []Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}, {ID: 4, Rack: "b"}}, 3, 2},
		{"a broker without rack", []Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3}}, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rack := map[int32]string{}
			for _, b := range tt.brokers {
				rack[b.ID] = b.Rack
			}
			const partitions = 12
			rs, err := SpreadReplicas("events", partitions, tt.rf, tt.brokers)
			if err != nil {
				t.Fatal(err)
			}
			lead := map[int32]int{}
			for p, r := range rs {
				if err := checkBrokerList("replicas", r); err != nil || len(r) != tt.rf {
					t.Fatalf("partition %d: replicas %v: %v", p, r, err)
				}
				racks := map[string]bool{}
				for _, id := range r {
					racks[rack[id]] = true
				}
				if len(racks) != tt.wantRacks {
					t.Errorf("partition %d: replicas %v span racks %v, want %d racks", p, r, racks, tt.wantRacks)
				}
				lead[r[0]]++
			}
			for _, b := range tt.brokers {
				if lead[b.ID] != partitions/len(tt.brokers) {
					t.Errorf("leaders %v: want %d each", lead, partitions/len(tt.brokers))
					break
				}
			}
		})
	}
	// Without racks the placement is the one without rack awareness.
	plain := []Broker{{ID: 1}, {ID: 2}, {ID: 3}}
	rs, _ := SpreadReplicas("events", 3, 2, plain)
	if fmt.Sprint(rs) != fmt.Sprint(spreadByID(t, plain)) {
		t.Fatalf("without racks: %v", rs)
	}
}

func spreadByID(t *testing.T, brokers []Broker) [][]int32 {
	leaders, err := Spread("events", 3, brokers)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]int32, len(leaders))
	for p, l := range leaders {
		out[p] = []int32{l, l%3 + 1}
	}
	return out
}
