package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A leader that found damage in its log asks to step down: the controller
// moves the leadership to another in-sync replica in the next leader epoch
// and takes the old leader out of the ISR; every member sees it. Asked by
// a broker that does not lead, or with no other in-sync replica, nothing
// moves and StepDown says why.
func TestStepDownMovesTheLeadershipToAnotherInSyncReplica(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	members := map[int32]*cluster.ZooKeeper{1: join(t, connect, 1), 2: join(t, connect, 2), 3: join(t, connect, 3)}
	for _, m := range members {
		testenv.Eventually(t, 5*time.Second, "three brokers", func() bool { return len(m.Brokers()) == 3 })
	}
	created, err := members[1].CreateReplicatedTopic(context.Background(), "damaged", 1, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	replicas := created.Replicas[0]
	leader, next := replicas[0], replicas[1]
	for _, m := range members {
		testenv.Eventually(t, 10*time.Second, "the new topic's state is seen", func() bool {
			tp, ok := m.Topic("damaged")
			st, sok := tp.StateOf(0)
			return ok && sok && st.Leader == leader
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := members[next].StepDown(ctx, "damaged", 0); !errors.Is(err, cluster.ErrNotLeading) {
		t.Fatalf("StepDown by a follower: %v, want ErrNotLeading", err)
	}
	if err := members[leader].StepDown(ctx, "damaged", 0); err != nil {
		t.Fatal(err)
	}
	isr := slices.DeleteFunc(slices.Clone(replicas), func(id int32) bool { return id == leader })
	for id, m := range members {
		testenv.Eventually(t, 10*time.Second, fmt.Sprintf("broker %d sees %d lead in epoch 1, isr %v", id, next, isr), func() bool {
			tp, _ := m.Topic("damaged")
			st, _ := tp.StateOf(0)
			return st.Leader == next && st.LeaderEpoch == 1 && slices.Equal(st.ISR, isr)
		})
	}
	// The new leader steps down too: the third replica is the only other
	// in-sync one. Then it is alone, and cannot.
	if err := members[next].StepDown(ctx, "damaged", 0); err != nil {
		t.Fatal(err)
	}
	last := replicas[2]
	testenv.Eventually(t, 10*time.Second, "the third replica leads", func() bool {
		tp, _ := members[last].Topic("damaged")
		st, _ := tp.StateOf(0)
		return st.Leader == last
	})
	if err := members[last].StepDown(ctx, "damaged", 0); !errors.Is(err, cluster.ErrEligibleNotAvailable) {
		t.Fatalf("StepDown of the only in-sync replica: %v, want ErrEligibleNotAvailable", err)
	}
}
