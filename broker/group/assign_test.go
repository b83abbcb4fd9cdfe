package group

import (
	"fmt"
	"testing"
)

func subscribed(topics ...string) *cmember { return &cmember{topics: topics} }

func counts(out map[string]tpSet) string {
	return fmt.Sprintf("a=%d b=%d c=%d", len(out["a"]), len(out["b"]), len(out["c"]))
}

// range gives contiguous ranges per topic, the first members one more.
func TestAssignRange(t *testing.T) {
	members := map[string]*cmember{"a": subscribed("x", "y"), "b": subscribed("x", "y"), "c": subscribed("y")}
	topics := []TopicInfo{{Name: "x", Partitions: 5}, {Name: "y", Partitions: 3}}
	out := assign(AssignorRange, members, topics, nil)
	want := map[string][]TopicPartition{
		"a": append(tps("x", 0, 1, 2), tps("y", 0)...),
		"b": append(tps("x", 3, 4), tps("y", 1)...),
		"c": tps("y", 2),
	}
	for id, w := range want {
		if got := out[id].sorted(); fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s: %v, want %v", id, got, w)
		}
	}
}

// uniform balances within one and keeps partitions where they were when a
// member joins: only what the newcomer needs moves.
func TestAssignUniformBalancedAndSticky(t *testing.T) {
	topics := []TopicInfo{{Name: "x", Partitions: 7}}
	members := map[string]*cmember{"a": subscribed("x"), "b": subscribed("x")}
	first := assign(AssignorUniform, members, topics, nil)
	if c := counts(first); c != "a=4 b=3 c=0" {
		t.Fatalf("two members: %s", c)
	}
	members["c"] = subscribed("x")
	second := assign(AssignorUniform, members, topics, first)
	if c := counts(second); c != "a=3 b=2 c=2" && c != "a=2 b=3 c=2" && c != "a=3 b=3 c=1" && c != "a=2 b=2 c=3" {
		t.Fatalf("three members: %s, want within one of each other", c)
	}
	moved := 0
	for _, id := range []string{"a", "b"} {
		for tp := range first[id] {
			if !second[id][tp] {
				moved++
			}
		}
	}
	if moved != len(second["c"]) {
		t.Errorf("%d partitions moved, want only the newcomer's %d", moved, len(second["c"]))
	}
	for _, tp := range tps("x", 0, 1, 2, 3, 4, 5, 6) {
		n := 0
		for _, s := range second {
			if s[tp] {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%v assigned %d times", tp, n)
		}
	}
}
