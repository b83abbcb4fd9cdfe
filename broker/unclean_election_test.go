package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// The unclean election test. Leader A takes records acknowledged
// by it alone (follower B stopped, so the ISR is A), then A dies and B
// returns. With unclean.leader.election.enable false the partition stays
// offline: B refuses produce and fetch. Turned on through AlterConfigs,
// B leads at once with a higher epoch and takes records; A, restarted,
// truncates the records only it had and copies B's, so both logs end
// byte-identical and nobody reads A's lost records.
func TestUncleanLeaderElection(t *testing.T) {
	const topic = "unclean"
	before, lost, after := numbered("before-", 10), numbered("lost-", 5), numbered("after-", 8)
	u := offlinePartition(t, topic, before, lost)
	connect, A, B, a, bID, adminB, offline := u.connect, u.A, u.B, u.a, u.b, u.admin, u.offline

	// Allowing it elects B without any broker change.
	v := "true"
	resps, err := adminB.AlterTopicConfigsState(context.Background(), []kadm.AlterConfig{{Name: "unclean.leader.election.enable", Value: &v}}, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resps.On(topic, nil); err == nil && r.Err != nil {
			err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
	}
	if err != nil {
		t.Fatalf("AlterConfigs unclean.leader.election.enable=true: %v", err)
	}
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		p := partitionMeta(t, adminB, topic)
		return p.Leader == bID && p.LeaderEpoch > offline.LeaderEpoch && slices.Equal(p.ISR, []int32{bID}), describePartition(p)
	})
	produceTo(t, B, topic, kgo.AllISRAcks(), after...)

	A = testenv.StartClusterBroker(t, connect, a, testenv.WithDataDir(A.DataDir), testenv.WithAddr(A.Addr),
		testenv.WithConfig(replicaTestConfig))
	testenv.Eventually(t, 30*time.Second, "A rejoins the isr", func() bool {
		return slices.Contains(partitionMeta(t, adminB, topic).ISR, a)
	})
	testenv.Eventually(t, 10*time.Second, "A's log is byte-identical to B's", func() bool {
		return bytes.Equal(firstSegment(t, A, topic), firstSegment(t, B, topic))
	})
	if seg := firstSegment(t, A, topic); bytes.Contains(seg, []byte("lost-")) {
		t.Fatal("A's log still holds the records only it had")
	}
	got := consumeValues(t, []string{B.Addr}, topic, len(before)+len(after))
	if want := append(before, after...); !slices.Equal(got, want) {
		t.Fatalf("read after the unclean election:\n got %q\nwant %q", got, want)
	}
}

// uncleanSetup is a two-broker cluster whose partition 0 of a topic is
// offline: its only in-sync replica, A, is stopped, and B, which missed
// A's last acknowledged records, is alive.
type uncleanSetup struct {
	connect string
	A, B    *testenv.Broker
	a, b    int32
	cl      *kgo.Client // to B
	admin   *kadm.Client
	offline kadm.PartitionDetail // the partition as B's Metadata shows it
}

// offlinePartition writes before to both replicas, stops follower B,
// writes lost (acks=all, so acknowledged by A alone), stops A, restarts
// B, and checks that the partition stays offline: no leader
// (LEADER_NOT_AVAILABLE), the ISR still A, and B refusing produce and
// fetch.
func offlinePartition(t *testing.T, topic string, before, lost []string) uncleanSetup {
	t.Helper()
	connect, byID, admin := twoReplicas(t, topic)
	a := partitionMeta(t, admin, topic).Leader
	bID := 3 - a
	A, B := byID[a], byID[bID]

	produceTo(t, A, topic, kgo.AllISRAcks(), before...)
	B.Stop()
	testenv.Eventually(t, 20*time.Second, "the isr shrinks to A", func() bool {
		return slices.Equal(partitionMeta(t, admin, topic).ISR, []int32{a})
	})
	produceTo(t, A, topic, kgo.AllISRAcks(), lost...) // acknowledged, on A only
	A.Stop()
	B = testenv.StartClusterBroker(t, connect, bID, testenv.WithDataDir(B.DataDir), testenv.WithAddr(B.Addr),
		testenv.WithConfig(replicaTestConfig))

	// B is the only broker, so its controller elected: nobody, since the
	// only ISR member is dead.
	cl, err := kgo.NewClient(kgo.SeedBrokers(B.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adminB := kadm.NewClient(cl)
	var offline kadm.PartitionDetail
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		offline = partitionMeta(t, adminB, topic)
		return offline.Leader == -1 && errors.Is(offline.Err, kerr.LeaderNotAvailable), "partition 0: " + describePartition(offline)
	})
	if !slices.Equal(offline.ISR, []int32{a}) {
		t.Fatalf("offline partition's isr %v, want [%d] (the brokers that may lead without loss)", offline.ISR, a)
	}
	if code := produceRaw(t, cl, bID, topic, "refused"); code != kerr.NotLeaderForPartition.Code && code != kerr.LeaderNotAvailable.Code {
		t.Fatalf("produce to B while offline: %v, want NOT_LEADER_OR_FOLLOWER or LEADER_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	if code := fetchRaw(t, cl, bID, topic); code != kerr.NotLeaderForPartition.Code && code != kerr.LeaderNotAvailable.Code {
		t.Fatalf("fetch from B while offline: %v, want NOT_LEADER_OR_FOLLOWER or LEADER_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	return uncleanSetup{connect: connect, A: A, B: B, a: a, b: bID, cl: cl, admin: adminB, offline: offline}
}

// The cluster-wide dynamic default reaches the controller as a topic's
// own config does: set to true, it elects B for the offline partition at
// once.
func TestUncleanLeaderElectionBrokerDefault(t *testing.T) {
	const topic = "unclean-default"
	u := offlinePartition(t, topic, numbered("before-", 3), numbered("lost-", 3))
	if err := alterBroker(t, u.admin, []kadm.AlterConfig{set("unclean.leader.election.enable", "true")}); err != nil {
		t.Fatalf("dynamic broker default unclean.leader.election.enable=true: %v", err)
	}
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		p := partitionMeta(t, u.admin, topic)
		return p.Leader == u.b && p.LeaderEpoch > u.offline.LeaderEpoch && slices.Equal(p.ISR, []int32{u.b}), describePartition(p)
	})
	produceTo(t, u.B, topic, kgo.AllISRAcks(), "after")
}

// An unclean election asked for on demand (ElectLeaders, type unclean) is
// done although the topic's unclean.leader.election.enable is false, as
// in Kafka: the operator accepts the loss for this partition, once. The
// config stays false.
func TestUncleanElectLeadersOnDemand(t *testing.T) {
	const topic = "unclean-asked"
	u := offlinePartition(t, topic, numbered("before-", 3), numbered("lost-", 3))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := u.admin.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[topic][0]; r.Err != nil {
		t.Fatalf("unclean ElectLeaders of the offline partition: %v %s, want it elected", r.Err, r.ErrMessage)
	}
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		p := partitionMeta(t, u.admin, topic)
		return p.Leader == u.b && p.LeaderEpoch > u.offline.LeaderEpoch && slices.Equal(p.ISR, []int32{u.b}), describePartition(p)
	})
	produceTo(t, u.B, topic, kgo.AllISRAcks(), "after")
	if c := topicConfig(t, u.admin, topic, "unclean.leader.election.enable"); c.Value == nil || *c.Value != "false" {
		t.Fatalf("unclean.leader.election.enable after an asked-for election: %+v, want false", c)
	}
}

func describePartition(p kadm.PartitionDetail) string {
	return fmt.Sprintf("leader %d epoch %d isr %v err %v", p.Leader, p.LeaderEpoch, p.ISR, p.Err)
}

// produceRaw sends one acks=all record to partition 0 of topic on broker
// id and returns the partition's error code: no client retries in between.
func produceRaw(t *testing.T, cl *kgo.Client, id int32, topic, value string) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = broker.EncodeBatchForTest([]broker.InternalRecord{{Value: []byte(value)}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl.Broker(int(id)))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetchRaw reads partition 0 of topic from offset 0 on broker id and
// returns the partition's error code.
func fetchRaw(t *testing.T, cl *kgo.Client, id int32, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.MaxBytes, req.MaxWaitMillis = 1<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl.Broker(int(id)))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// unclean.leader.election.enable is a boolean topic config: CreateTopics,
// AlterConfigs and IncrementalAlterConfigs take true or false and refuse
// anything else with INVALID_CONFIG naming the key; DescribeConfigs
// reports it with where its value comes from: the topic, the dynamic
// cluster-wide default, the broker's flag or the built-in false.
func TestUncleanLeaderElectionConfig(t *testing.T) {
	const key = "unclean.leader.election.enable"
	ctx := context.Background()
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr)
	describe := func(topic string) kadm.Config { return topicConfig(t, adm, topic, key) }
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want INVALID_CONFIG naming %s", what, err, key)
		}
	}

	createTopic(t, b.Addr, "plain", 1, nil)
	wantConfig(t, "a topic that sets nothing", describe("plain"), "false", kmsg.ConfigSourceDefaultConfig)
	createTopic(t, b.Addr, "on", 1, map[string]*string{key: kmsg.StringPtr("true")})
	wantConfig(t, "created with true", describe("on"), "true", kmsg.ConfigSourceDynamicTopicConfig)

	resp, _ := adm.CreateTopic(ctx, 1, 1, map[string]*string{key: kmsg.StringPtr("maybe")}, "bad")
	refused("CreateTopics with maybe", errors.Join(resp.Err, errors.New(resp.ErrMessage)))
	refused("IncrementalAlterConfigs with yes", alterTopic(t, adm, "plain", set(key, "yes")))
	rs, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: key, Value: kmsg.StringPtr("1")}}, "plain")
	if err == nil {
		err = errors.Join(rs[0].Err, errors.New(rs[0].ErrMessage))
	}
	refused("AlterConfigs with 1", err)
	wantConfig(t, "after refused changes", describe("plain"), "false", kmsg.ConfigSourceDefaultConfig)

	if err := alterTopic(t, adm, "plain", set(key, "TRUE")); err != nil {
		t.Fatalf("IncrementalAlterConfigs with TRUE: %v", err)
	}
	wantConfig(t, "altered to TRUE", describe("plain"), "true", kmsg.ConfigSourceDynamicTopicConfig)
	if err := alterTopic(t, adm, "plain", kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key}); err != nil {
		t.Fatal(err)
	}

	// The cluster-wide dynamic default, under Kafka's broker key.
	refused("dynamic broker default maybe", alterBroker(t, adm, []kadm.AlterConfig{set(key, "maybe")}))
	if err := alterBroker(t, adm, []kadm.AlterConfig{set(key, "true")}); err != nil {
		t.Fatalf("dynamic broker default true: %v", err)
	}
	wantConfig(t, "the cluster-wide default", describe("plain"), "true", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	wantConfig(t, "the broker's own view", brokerConfigs(t, adm, 0)[key], "true", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	createTopic(t, b.Addr, "off", 1, map[string]*string{key: kmsg.StringPtr("false")})
	wantConfig(t, "a topic's own false over the default", describe("off"), "false", kmsg.ConfigSourceDynamicTopicConfig)

	// The flag.
	flagged := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.UncleanLeaderElection = true }))
	createTopic(t, flagged.Addr, "plain", 1, nil)
	adm, _ = newAdmin(t, flagged.Addr)
	wantConfig(t, "--unclean-leader-election-enable", describe("plain"), "true", kmsg.ConfigSourceStaticBrokerConfig)
}
