package cluster

import (
	"fmt"
	"testing"
)

func brokersUpTo(n int32) []Broker {
	var bs []Broker
	for id := int32(1); id <= n; id++ {
		bs = append(bs, Broker{ID: id})
	}
	return bs
}

// TestCoordinatorPlacement: groups spread evenly over the brokers, and a
// broker joining or leaving moves only the groups it takes or had.
func TestCoordinatorPlacement(t *testing.T) {
	const groups = 12000
	three, four := brokersUpTo(3), brokersUpTo(4)
	per := map[int32]int{}
	moved := 0
	for i := range groups {
		name := fmt.Sprintf("app-%d", i)
		a, _ := GroupCoordinator(name, three)
		b, _ := GroupCoordinator(name, four)
		per[a.ID]++
		if a.ID != b.ID {
			moved++
			if b.ID != 4 {
				t.Fatalf("group %s moved from %d to %d when broker 4 joined", name, a.ID, b.ID)
			}
		}
	}
	for id, n := range per {
		if n < groups/3*9/10 || n > groups/3*11/10 {
			t.Errorf("broker %d coordinates %d of %d groups; want about a third", id, n, groups)
		}
	}
	if moved < groups/4*9/10 || moved > groups/4*11/10 {
		t.Errorf("%d of %d groups moved to a fourth broker; want about a quarter", moved, groups)
	}
	if _, ok := GroupCoordinator("g", nil); ok {
		t.Error("a coordinator with no live broker")
	}
}
