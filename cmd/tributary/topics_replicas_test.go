package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// `topics reassign` moves a partition to a new replica list whose first
// replica is not the current leader; `topics reassignments` shows it
// until it is done; `topics elect-leaders` then hands the leadership to
// that new preferred replica.
func TestTopicsReassignAndElectLeaders(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	_, brokers := testenv.StartCluster(t, 3)
	seed := brokers[0].Addr
	testenv.Run(t, "", 0, "topics", "create", "--brokers", seed, "--partitions", "1", "--replication-factor", "2", "mv")
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
	out := testenv.Run(t, "", 0, "topics", "reassign", "--brokers", seed, "--topic", "mv", "--partition", "0", "--replicas", fmt.Sprintf("%d,%d", target[0], target[1]))
	if !strings.Contains(out, "mv-0: moving to replicas") {
		t.Fatalf("topics reassign: %q", out)
	}
	testenv.Eventually(t, 30*time.Second, "the move is done", func() bool {
		return strings.Contains(testenv.Run(t, "", 0, "topics", "reassignments", "--brokers", seed), "no reassignment in progress") &&
			slices.Equal(part().Replicas, target)
	})
	if p := part(); p.Leader != target[1] {
		t.Fatalf("leader %d after the move, want %d (still a replica, so it keeps leading)", p.Leader, target[1])
	}
	out = testenv.Run(t, "", 0, "topics", "elect-leaders", "--brokers", seed, "--topic", "mv")
	if !strings.Contains(out, "mv-0: leader elected") || !strings.Contains(out, "1 leaders moved") {
		t.Fatalf("topics elect-leaders: %q", out)
	}
	testenv.Eventually(t, 10*time.Second, "the new preferred replica leads", func() bool { return part().Leader == target[0] })
	if msg := testenv.RunStderr(t, 1, "topics", "reassign", "--brokers", seed, "--topic", "mv", "--partition", "0", "--replicas", "1"); !strings.Contains(msg, "INVALID_REPLICA_ASSIGNMENT") {
		t.Fatalf("one replica: %q", msg)
	}
}

// `topics reassign --throttle` holds a move's copying to a rate, as
// Kafka's reassignment tool does: the rates on every broker involved, the
// partition's current replicas in the topic's leader list and the added
// one in its follower list. `topics reassign --verify` fails while the
// move is under way and, once it is done, removes all of it.
func TestTopicsReassignThrottle(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	_, brokers := testenv.StartCluster(t, 3)
	seed := brokers[0].Addr
	testenv.Run(t, "", 0, "topics", "create", "--brokers", seed, "--partitions", "1", "--replication-factor", "2", "thr")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.DefaultProduceTopic("thr"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(256<<10), kgo.RecordRetries(20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Metadata from a client of its own, not cached (kgo answers from the
	// producer's recent metadata otherwise).
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	ctx := context.Background()
	part := func() kadm.PartitionDetail {
		md, err := adm.Metadata(ctx, "thr")
		if err != nil {
			return kadm.PartitionDetail{Leader: -1}
		}
		return md.Topics["thr"].Partitions[0]
	}
	testenv.Eventually(t, 10*time.Second, "thr-0 led with two in-sync replicas", func() bool {
		p := part()
		return p.Leader >= 0 && len(p.ISR) == 2
	})
	// 3 MB: more than one replica fetch carries, so a throttle of 1000
	// bytes a second holds the move back once the first fetch is in.
	value := strings.Repeat("x", 1000)
	for i := range 3000 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%d%s", i, value))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p := part()
	var third int32
	for id := int32(1); id <= 3; id++ {
		if !slices.Contains(p.Replicas, id) {
			third = id
		}
	}
	target := fmt.Sprintf("%d,%d", third, p.Leader)
	reassign := []string{"topics", "reassign", "--brokers", seed, "--topic", "thr", "--partition", "0"}
	out := testenv.Run(t, "", 0, slices.Concat(reassign, []string{"--replicas", target, "--throttle", "1000"})...)
	if !strings.Contains(out, "copying at most 1000 bytes a second") {
		t.Fatalf("topics reassign --throttle: %q", out)
	}

	topicConfigs := func() map[string]string {
		rcs, err := adm.DescribeTopicConfigs(ctx, "thr")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range rcs[0].Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
				out[c.Key] = *c.Value
			}
		}
		return out
	}
	brokerRates := func(id int32) map[string]string {
		rcs, err := adm.DescribeBrokerConfigs(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range rcs[0].Configs {
			if strings.HasSuffix(c.Key, ".replication.throttled.rate") && c.Source == kmsg.ConfigSourceDynamicBrokerConfig && c.Value != nil {
				out[c.Key] = *c.Value
			}
		}
		return out
	}
	tc := topicConfigs()
	leaders := fmt.Sprintf("0:%d,0:%d", p.Replicas[0], p.Replicas[1])
	if tc["leader.replication.throttled.replicas"] != leaders || tc["follower.replication.throttled.replicas"] != fmt.Sprintf("0:%d", third) {
		t.Fatalf("topic configs during the move: %v; want leader list %s, follower list 0:%d", tc, leaders, third)
	}
	for id := int32(1); id <= 3; id++ {
		if r := brokerRates(id); r["leader.replication.throttled.rate"] != "1000" || r["follower.replication.throttled.rate"] != "1000" {
			t.Fatalf("broker %d's throttle rates during the move: %v, want 1000 each", id, r)
		}
	}
	if out := testenv.Run(t, "", 0, "topics", "reassignments", "--brokers", seed); !strings.Contains(out, "thr-0: replicas") {
		t.Fatalf("topics reassignments during the move: %q", out)
	}
	if msg := testenv.RunStderr(t, 1, slices.Concat(reassign, []string{"--verify"})...); !strings.Contains(msg, "thr-0: still moving") {
		t.Fatalf("topics reassign --verify during the move: %q", msg)
	}
	if tc := topicConfigs(); tc["follower.replication.throttled.replicas"] == "" {
		t.Fatalf("--verify lifted the throttle of a move under way: %v", tc)
	}

	// Raising the throttle (the same move again) lets it complete.
	testenv.Run(t, "", 0, slices.Concat(reassign, []string{"--replicas", target, "--throttle", "1000000000"})...)
	testenv.Eventually(t, 60*time.Second, "--verify finds the move done", func() bool {
		cmd := exec.Command(testenv.Binary(t), slices.Concat(reassign, []string{"--verify"})...)
		out, _ := cmd.Output()
		return cmd.ProcessState.ExitCode() == 0 && strings.Contains(string(out), "thr-0: reassignment complete")
	})
	testenv.Eventually(t, 10*time.Second, "replicas "+target+" in the metadata", func() bool {
		got := part().Replicas
		return len(got) == 2 && fmt.Sprintf("%d,%d", got[0], got[1]) == target
	})
	if tc := topicConfigs(); tc["leader.replication.throttled.replicas"] != "" || tc["follower.replication.throttled.replicas"] != "" {
		t.Errorf("topic configs after --verify: %v, want no throttled replicas", tc)
	}
	for id := int32(1); id <= 3; id++ {
		if r := brokerRates(id); len(r) != 0 {
			t.Errorf("broker %d's throttle rates after --verify: %v, want none", id, r)
		}
	}
}
