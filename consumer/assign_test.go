package consumer

import (
	"fmt"
	"reflect"
	"testing"
)

func parts(n int) []int32 {
	ps := make([]int32, n)
	for i := range ps {
		ps[i] = int32(i)
	}
	return ps
}

func TestRange(t *testing.T) {
	tests := []struct {
		name       string
		partitions []int32
		consumers  []string
		self       string
		want       []int32
	}{
		{"even split, first", parts(12), []string{"a", "b", "c"}, "a", []int32{0, 1, 2, 3}},
		{"even split, middle", parts(12), []string{"a", "b", "c"}, "b", []int32{4, 5, 6, 7}},
		{"even split, last", parts(12), []string{"a", "b", "c"}, "c", []int32{8, 9, 10, 11}},
		{"consumers unsorted", parts(12), []string{"c", "a", "b"}, "b", []int32{4, 5, 6, 7}},
		{"partitions unsorted", []int32{3, 0, 2, 1}, []string{"a", "b"}, "b", []int32{2, 3}},
		{"remainder to the lowest ids, first", parts(10), []string{"a", "b", "c"}, "a", []int32{0, 1, 2, 3}},
		{"remainder to the lowest ids, second", parts(11), []string{"a", "b", "c"}, "b", []int32{4, 5, 6, 7}},
		{"remainder, last gets the short run", parts(11), []string{"a", "b", "c"}, "c", []int32{8, 9, 10}},
		{"alone takes all", parts(5), []string{"a"}, "a", parts(5)},
		{"more consumers than partitions, busy", parts(2), []string{"a", "b", "c"}, "b", []int32{1}},
		{"more consumers than partitions, idle", parts(2), []string{"a", "b", "c"}, "c", nil},
		{"not a subscriber", parts(4), []string{"a", "b"}, "z", nil},
		{"no partitions", nil, []string{"a"}, "a", nil},
		{"sparse partitions (a broker is down)", []int32{0, 2, 5, 7}, []string{"a", "b"}, "b", []int32{5, 7}},
		{"duplicates ignored", []int32{1, 1, 0}, []string{"a", "a", "b"}, "b", []int32{1}},
		{"ids sort as strings", parts(4), []string{"c10", "c9"}, "c10", []int32{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Range(tt.partitions, tt.consumers, tt.self)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Range(%v, %v, %q) = %v, want %v", tt.partitions, tt.consumers, tt.self, got, tt.want)
			}
		})
	}
}

// Every partition goes to exactly one consumer, runs are contiguous and
// sizes differ by at most one, whatever the counts.
func TestRangeCoversEveryPartitionOnce(t *testing.T) {
	for p := 0; p <= 20; p++ {
		for c := 1; c <= 12; c++ {
			var consumers []string
			for i := range c {
				consumers = append(consumers, fmt.Sprintf("consumer-%02d", i))
			}
			owner := map[int32]string{}
			lo, hi := p, 0
			for _, self := range consumers {
				mine := Range(parts(p), consumers, self)
				lo, hi = min(lo, len(mine)), max(hi, len(mine))
				for i, part := range mine {
					if prev, ok := owner[part]; ok {
						t.Fatalf("p=%d c=%d: partition %d taken by %s and %s", p, c, part, prev, self)
					}
					owner[part] = self
					if i > 0 && part != mine[i-1]+1 {
						t.Fatalf("p=%d c=%d: %s got a non-contiguous run %v", p, c, self, mine)
					}
				}
			}
			if len(owner) != p {
				t.Fatalf("p=%d c=%d: %d partitions assigned", p, c, len(owner))
			}
			if p > 0 && hi-lo > 1 {
				t.Fatalf("p=%d c=%d: run sizes from %d to %d", p, c, lo, hi)
			}
		}
	}
}

func TestAssignPerTopicSubscriptions(t *testing.T) {
	partitions := map[string][]int32{"clicks": parts(4), "views": parts(6), "unsubscribed": parts(3)}
	subscribers := map[string][]string{
		"clicks": {"a", "b"},
		"views":  {"b"},
	}
	got := Assign(partitions, subscribers, "b")
	want := map[string][]int32{"clicks": {2, 3}, "views": parts(6)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Assign = %v, want %v", got, want)
	}
	if got := Assign(partitions, subscribers, "a"); !reflect.DeepEqual(got, map[string][]int32{"clicks": {0, 1}}) {
		t.Fatalf("Assign for a = %v", got)
	}
}
