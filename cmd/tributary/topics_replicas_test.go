package main_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// `topics reassign` moves a partition to a new replica list whose first
// replica is not the current leader; `topics reassignments` shows it
// until it is done; `topics elect-leaders` then hands the leadership to
// that new preferred replica.
func TestTopicsReassignAndElectLeaders(t *testing.T) {
	_, brokers := testenv.StartCluster(t, 3)
	seed := brokers[0].Addr
	run(t, "", 0, "topics", "create", "--brokers", seed, "--partitions", "1", "--replication-factor", "2", "mv")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	part := func() kadm.PartitionDetail {
		md, err := adm.Metadata(context.Background(), "mv")
		if err != nil {
			return kadm.PartitionDetail{Leader: -1}
		}
		return md.Topics["mv"].Partitions[0]
	}
	testenv.Eventually(t, 10*time.Second, "mv-0 led with two in-sync replicas", func() bool {
		p := part()
		return p.Leader >= 0 && len(p.ISR) == 2
	})
	p := part()
	var third int32
	for id := int32(1); id <= 3; id++ {
		if !slices.Contains(p.Replicas, id) {
			third = id
		}
	}
	target := []int32{third, p.Leader}
	out := run(t, "", 0, "topics", "reassign", "--brokers", seed, "--topic", "mv", "--partition", "0", "--replicas", fmt.Sprintf("%d,%d", target[0], target[1]))
	if !strings.Contains(out, "mv-0: moving to replicas") {
		t.Fatalf("topics reassign: %q", out)
	}
	testenv.Eventually(t, 30*time.Second, "the move is done", func() bool {
		return strings.Contains(run(t, "", 0, "topics", "reassignments", "--brokers", seed), "no reassignment in progress") &&
			slices.Equal(part().Replicas, target)
	})
	if p := part(); p.Leader != target[1] {
		t.Fatalf("leader %d after the move, want %d (still a replica, so it keeps leading)", p.Leader, target[1])
	}
	out = run(t, "", 0, "topics", "elect-leaders", "--brokers", seed, "--topic", "mv")
	if !strings.Contains(out, "mv-0: leader elected") || !strings.Contains(out, "1 leaders moved") {
		t.Fatalf("topics elect-leaders: %q", out)
	}
	testenv.Eventually(t, 10*time.Second, "the new preferred replica leads", func() bool { return part().Leader == target[0] })
	if msg := runStderr(t, 1, "topics", "reassign", "--brokers", seed, "--topic", "mv", "--partition", "0", "--replicas", "1"); !strings.Contains(msg, "INVALID_REPLICA_ASSIGNMENT") {
		t.Fatalf("one replica: %q", msg)
	}
}
