package compat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Apache Kafka's reassignment and log-dirs tools on a three-broker
// cluster. kafka-reassign-partitions --verify of a completed move exited 1
// (it removes replica.alter.log.dirs.io.max.bytes.per.second with the
// replication throttles, and that key was refused), so the throttles it
// should lift stayed; kafka-log-dirs listed only the partitions a broker
// leads, not those it follows.
func TestReassignVerifyAndLogDirsWithKafkaTools(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.JVM)
	_, bs := testenv.StartCluster(t, 3)
	addr := bs[0].Addr
	boot := []string{"--bootstrap-server", addr}
	run := func(class string, args ...string) testenv.KafkaToolRun {
		return testenv.KafkaToolRun{Class: class, Args: append(slices.Clone(boot), args...)}
	}
	mustRun := func(runs ...testenv.KafkaToolRun) []testenv.KafkaToolResult {
		t.Helper()
		res := testenv.RunKafkaTools(t, runs...)
		for _, r := range res {
			if r.Exit != 0 {
				t.Fatalf("%v", r)
			}
		}
		return res
	}
	mustRun(run(testenv.KafkaTopics, "--create", "--topic", "mv", "--partitions", "1", "--replication-factor", "2"))
	brokertest.ProduceValues(t, addr, "mv", 0, 100) // acks=all: the follower holds them too
	adm, _ := brokertest.NewAdmin(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, "mv")
	if err != nil {
		t.Fatal(err)
	}
	before := slices.Sorted(slices.Values(td["mv"].Partitions[0].Replicas))
	var absent int32
	for _, b := range []int32{1, 2, 3} {
		if !slices.Contains(before, b) {
			absent = b
		}
	}
	// Move off the first replica onto the broker without one.
	after := slices.Sorted(slices.Values([]int32{before[1], absent}))
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(fmt.Sprintf(`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[%d,%d]}]}`, after[0], after[1])), 0o644); err != nil {
		t.Fatal(err)
	}
	res := mustRun(
		run(testenv.KafkaLogDirs, "--describe", "--broker-list", "1,2,3", "--topic-list", "mv"),
		run(testenv.KafkaReassign, "--execute", "--reassignment-json-file", plan, "--throttle", "5000000"),
	)
	if got := brokersListing(t, res[0], "mv-0"); !slices.Equal(got, before) {
		t.Fatalf("kafka-log-dirs before the move lists mv-0 on brokers %v, want %v (leader and follower)\n%v", got, before, res[0])
	}

	testenv.Eventually(t, 60*time.Second, "the move of mv-0 completes", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		moving, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil || len(moving) > 0 {
			return false
		}
		td, err := adm.ListTopics(ctx, "mv")
		if err != nil {
			return false
		}
		p := td["mv"].Partitions[0]
		return slices.Equal(slices.Sorted(slices.Values(p.Replicas)), after) && len(p.ISR) == 2
	})
	res = mustRun(
		run(testenv.KafkaReassign, "--verify", "--reassignment-json-file", plan),
		run(testenv.KafkaLogDirs, "--describe", "--broker-list", "1,2,3", "--topic-list", "mv"),
	)
	if !strings.Contains(res[0].Stdout, "Reassignment of partition mv-0 is completed") {
		t.Fatalf("--verify does not report the move completed:\n%v", res[0])
	}
	if got := brokersListing(t, res[1], "mv-0"); !slices.Contains(got, after[0]) || !slices.Contains(got, after[1]) {
		t.Fatalf("kafka-log-dirs after the move lists mv-0 on brokers %v, want %v\n%v", got, after, res[1])
	}
	// --verify lifted the broker throttles it set.
	for _, b := range []int32{1, 2, 3} {
		cfgs, err := adm.DescribeBrokerConfigs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range cfgs {
			for _, c := range rc.Configs {
				if strings.HasSuffix(c.Key, "replication.throttled.rate") && c.Source == kmsg.ConfigSourceDynamicBrokerConfig {
					t.Errorf("broker %d still has %s=%v after --verify", b, c.Key, c.MaybeValue())
				}
			}
		}
	}
}

// brokersListing parses kafka-log-dirs' JSON and returns the brokers that
// list partition (e.g. "mv-0"), sorted.
func brokersListing(t *testing.T, r testenv.KafkaToolResult, partition string) []int32 {
	t.Helper()
	var doc struct {
		Brokers []struct {
			Broker  int32 `json:"broker"`
			LogDirs []struct {
				Partitions []struct {
					Partition string `json:"partition"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	for _, line := range strings.Split(r.Stdout, "\n") {
		if strings.HasPrefix(line, "{") {
			if err := json.Unmarshal([]byte(line), &doc); err != nil {
				t.Fatalf("kafka-log-dirs output: %v\n%v", err, r)
			}
		}
	}
	var out []int32
	for _, b := range doc.Brokers {
		for _, d := range b.LogDirs {
			for _, p := range d.Partitions {
				if p.Partition == partition {
					out = append(out, b.Broker)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
