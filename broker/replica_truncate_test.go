package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// twoReplicas starts brokers 1 and 2 on a real ZooKeeper, with a lag
// bound long enough that a paused follower stays in the ISR, and creates
// topic with one partition on both. It returns the brokers by id.
func twoReplicas(t *testing.T, topic string, opts ...testenv.BrokerOption) (connect string, byID map[int32]*testenv.Broker, admin *kadm.Client) {
	t.Helper()
	connect = testenv.StartZooKeeper(t)
	opts = append([]testenv.BrokerOption{testenv.WithConfig(replicaTestConfig)}, opts...)
	byID = map[int32]*testenv.Broker{
		1: testenv.StartClusterBroker(t, connect, 1, opts...),
		2: testenv.StartClusterBroker(t, connect, 2, opts...),
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(byID[1].Addr, byID[2].Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	admin = kadm.NewClient(cl)
	testenv.Eventually(t, 10*time.Second, "creating the topic with 2 replicas", func() bool {
		resp, err := admin.CreateTopic(context.Background(), 1, 2, nil, topic)
		return err == nil && (resp.Err == nil || errors.Is(resp.Err, kerr.TopicAlreadyExists))
	})
	testenv.Eventually(t, 10*time.Second, "both replicas in the isr", func() bool {
		return len(partitionMeta(t, admin, topic).ISR) == 2
	})
	return connect, byID, admin
}

func replicaTestConfig(c *broker.Config) { c.ReplicaLagMax = time.Hour; c.MinInsyncReplicas = 1 }

// produceTo writes values to topic through one broker with acks.
func produceTo(t *testing.T, b *testenv.Broker, topic string, acks kgo.Acks, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(acks),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range values {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("producing %q through %s: %v", v, b.Addr, err)
		}
	}
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func firstSegment(t *testing.T, b *testenv.Broker, topic string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.DataDir, topic+"-0", fmt.Sprintf("%020d.log", 0)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return data
}

// The truncation test: leader A takes records that reach no
// follower (acks=1, follower paused), A stops, follower B is elected and
// takes other records at the same offsets; A, restarted, truncates its
// log to where it diverged from B's and copies B's records, so both logs
// are byte-identical, and a consumer reading from A once it leads again
// never sees A's lost records.
func TestRestartedLeaderTruncatesItsDivergedLog(t *testing.T) {
	const topic = "diverge"
	connect, byID, admin := twoReplicas(t, topic)
	a := partitionMeta(t, admin, topic).Leader
	bID := 3 - a
	A, B := byID[a], byID[bID]

	before, lost, after := numbered("before-", 10), numbered("lost-", 5), numbered("after-", 8)
	produceTo(t, A, topic, kgo.AllISRAcks(), before...)
	resume := B.PauseReplication()
	produceTo(t, A, topic, kgo.LeaderAck(), lost...) // offsets 10-14, on A only
	A.Stop()
	resume()
	testenv.Eventually(t, 30*time.Second, "B leads", func() bool {
		p := partitionMeta(t, admin, topic)
		return p.Leader == bID && p.LeaderEpoch == 1
	})
	produceTo(t, B, topic, kgo.AllISRAcks(), after...) // offsets 10-17, on B only

	A = testenv.StartClusterBroker(t, connect, a, testenv.WithDataDir(A.DataDir), testenv.WithAddr(A.Addr),
		testenv.WithConfig(replicaTestConfig))
	testenv.Eventually(t, 30*time.Second, "A rejoins the isr", func() bool {
		return slices.Contains(partitionMeta(t, admin, topic).ISR, a)
	})
	testenv.Eventually(t, 10*time.Second, "A's log is byte-identical to B's", func() bool {
		return bytes.Equal(firstSegment(t, A, topic), firstSegment(t, B, topic))
	})

	// A leads again: what it serves is B's history.
	B.Stop()
	testenv.Eventually(t, 30*time.Second, "A leads again", func() bool {
		p := partitionMeta(t, admin, topic)
		return p.Leader == a && p.LeaderEpoch == 2
	})
	got := consumeValues(t, []string{A.Addr}, topic, len(before)+len(after))
	if want := append(before, after...); !slices.Equal(got, want) {
		t.Fatalf("read from A after it led again:\n got %q\nwant %q", got, want)
	}
}

// A restarted follower checks every partition it follows against its
// leader before fetching: one OffsetForLeaderEpoch request carrying them
// all, not one request per partition.
func TestRestartedFollowerBatchesEpochRequests(t *testing.T) {
	const topic, partitions = "epochbatch", 6
	connect := testenv.StartZooKeeper(t)
	opt := testenv.WithConfig(replicaTestConfig)
	one := testenv.StartClusterBroker(t, connect, 1, opt)
	two := testenv.StartClusterBroker(t, connect, 2, opt)
	cl, err := kgo.NewClient(kgo.SeedBrokers(one.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	admin := kadm.NewClient(cl)
	inSync := func(want int) func() bool {
		return func() bool {
			m, err := admin.Metadata(context.Background(), topic)
			if err != nil || len(m.Topics[topic].Partitions) != partitions {
				return false
			}
			for _, p := range m.Topics[topic].Partitions {
				if len(p.ISR) != want || p.Leader != 1 && want == 1 {
					return false
				}
			}
			return true
		}
	}
	testenv.Eventually(t, 10*time.Second, "creating the topic", func() bool {
		resp, err := admin.CreateTopic(context.Background(), partitions, 2, nil, topic)
		return err == nil && (resp.Err == nil || errors.Is(resp.Err, kerr.TopicAlreadyExists))
	})
	testenv.Eventually(t, 10*time.Second, "every partition on both brokers", inSync(2))

	// Every partition gets records, so each of broker 2's logs knows a
	// leader epoch and is checked after the restart.
	pr, err := kgo.NewClient(kgo.SeedBrokers(one.Addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(20))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * partitions {
		r := &kgo.Record{Value: []byte(strconv.Itoa(i)), Partition: int32(i % partitions)}
		if err := pr.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	pr.Close()

	two.Stop()
	testenv.Eventually(t, 30*time.Second, "broker 1 leads every partition alone", inSync(1))
	two = testenv.StartClusterBroker(t, connect, 2, testenv.WithDataDir(two.DataDir), testenv.WithAddr(two.Addr), opt)
	testenv.Eventually(t, 30*time.Second, "broker 2 back in every isr", inSync(2))
	if n := two.EpochRequestsSent(); n != 1 {
		t.Fatalf("broker 2 sent %d OffsetForLeaderEpoch requests for %d partitions led by one broker, want 1", n, partitions)
	}
}

// DeleteRecords on a leader moves its followers' log start too, and both
// trim their leader-epoch checkpoints to it: a follower elected later
// neither serves the deleted records nor answers for epochs below them.
func TestFollowerEpochsFollowDeleteRecords(t *testing.T) {
	const topic = "trimmed"
	_, byID, admin := twoReplicas(t, topic)
	leader := partitionMeta(t, admin, topic).Leader
	produceTo(t, byID[leader], topic, kgo.AllISRAcks(), numbered("v-", 20)...)
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 15})
	res, err := admin.DeleteRecords(context.Background(), offsets)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup(topic, 0); r.Err != nil || r.LowWatermark != 15 {
		t.Fatalf("DeleteRecords: %+v", r)
	}
	read := func(b *testenv.Broker, name string) string {
		data, _ := os.ReadFile(filepath.Join(b.DataDir, topic+"-0", name))
		return string(data)
	}
	for id, b := range byID {
		testenv.Eventually(t, 10*time.Second, fmt.Sprintf("broker %d starts at 15, epoch 0 from 15", id), func() bool {
			return read(b, "log-start-offset") == "15\n" && read(b, "leader-epoch-checkpoint") == "0\n1\n0 15\n"
		})
	}
}
