package broker_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// moveOff writes values to topic (one partition, on brokers 1 and 2 of
// twoReplicas), starts broker 3 and moves the partition to brokers 2 and
// 3, waiting until the move completed.
func moveOff(t *testing.T, connect string, byID map[int32]*testenv.Broker, admin *kadm.Client, topic string, values []string) {
	t.Helper()
	produceTo(t, byID[1], topic, kgo.AllISRAcks(), values...)
	if !hasPartitionDir(t, byID[1], topic) {
		t.Fatal("broker 1 holds no copy before the move")
	}
	byID[3] = testenv.StartClusterBroker(t, connect, 3, testenv.WithConfig(replicaTestConfig))
	target := []int32{2, 3}
	testenv.Eventually(t, 10*time.Second, "broker 3 registered and the move recorded", func() bool {
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(topic, 0, target)
		res, err := admin.AlterPartitionAssignments(context.Background(), req)
		return err == nil && res.Error() == nil
	})
	testenv.Eventually(t, 60*time.Second, "the move completes", func() bool {
		l, err := admin.ListPartitionReassignments(context.Background(), kadm.TopicsSet{topic: {0: {}}})
		p := partitionMeta(t, admin, topic)
		return err == nil && len(l) == 0 && slices.Equal(p.Replicas, target) && slices.Contains(target, p.Leader)
	})
}

func hasPartitionDir(t *testing.T, b *testenv.Broker, topic string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(b.DataDir, topic+"-0"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// After a reassignment moves a partition from brokers {1,2} to {2,3},
// broker 1 deletes its copy (leader-epoch checkpoint included); brokers 2
// and 3 hold identical logs and consumers read every record.
func TestReassignmentDeletesRemovedReplica(t *testing.T) {
	const topic = "moved"
	values := numbered("v-", 40)
	connect, byID, admin := twoReplicas(t, topic)
	moveOff(t, connect, byID, admin, topic, values)
	testenv.Eventually(t, 20*time.Second, "broker 1's copy deleted", func() bool { return !hasPartitionDir(t, byID[1], topic) })
	testenv.Eventually(t, 10*time.Second, "brokers 2 and 3 hold identical logs", func() bool {
		a, b := firstSegment(t, byID[2], topic), firstSegment(t, byID[3], topic)
		return len(a) > 0 && bytes.Equal(a, b)
	})
	if got := consumeValues(t, []string{byID[2].Addr, byID[3].Addr}, topic, len(values)); !slices.Equal(got, values) {
		t.Fatalf("consumed after the move:\n got %q\nwant %q", got, values)
	}
	if !hasPartitionDir(t, byID[2], topic) || !hasPartitionDir(t, byID[3], topic) {
		t.Fatal("a replica of the partition lost its copy")
	}
}

// A broker that cannot read the partition's assignment from ZooKeeper
// when it is about to delete its copy (here the topic node's ACL refuses
// it) keeps the copy, and deletes it once the node reads again.
func TestReassignmentKeepsReplicaWhileAssignmentUnreadable(t *testing.T) {
	const topic = "unreadable"
	connect, byID, admin := twoReplicas(t, topic)
	zs, err := cluster.DialZooKeeper(context.Background(), connect, testenv.Logger(t, slog.LevelWarn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zs.Close() })
	if err := zs.Conn.AddAuth("digest", []byte("test:secret")); err != nil {
		t.Fatal(err)
	}
	node := zs.Paths.Topic(topic)
	t.Cleanup(func() { zs.Conn.SetACL(node, zk.WorldACL(zk.PermAll), -1) }) // lets the chroot go
	var checks atomic.Int32
	broker.BeforeStrayCheck(t, func(string, int32) {
		if checks.Add(1) == 1 {
			// From now on only this test's session may read the node.
			if _, err := zs.Conn.SetACL(node, zk.DigestACL(zk.PermAll, "test", "secret"), -1); err != nil {
				t.Errorf("locking the topic node: %v", err)
			}
		}
	})
	moveOff(t, connect, byID, admin, topic, numbered("v-", 10))
	// A second check starts only after the first one ended, refused.
	testenv.Eventually(t, 20*time.Second, "broker 1 tried twice, or deleted", func() bool {
		return checks.Load() >= 2 || !hasPartitionDir(t, byID[1], topic)
	})
	if !hasPartitionDir(t, byID[1], topic) {
		t.Fatal("broker 1 deleted its copy although it could not read the assignment")
	}
	if _, err := zs.Conn.SetACL(node, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "broker 1's copy deleted once the node reads again", func() bool {
		return !hasPartitionDir(t, byID[1], topic)
	})
}

// A topic left out of the view because its node cannot be decoded (not
// deleted) keeps its data on every broker; deleted for real, it goes.
func TestTopicLeftOutOfTheViewKeepsItsReplicas(t *testing.T) {
	const topic = "undecodable"
	connect, byID, admin := twoReplicas(t, topic)
	produceTo(t, byID[1], topic, kgo.AllISRAcks(), numbered("v-", 10)...)
	zs, err := cluster.DialZooKeeper(context.Background(), connect, testenv.Logger(t, slog.LevelWarn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zs.Close() })
	node, _, err := zs.Conn.Get(zs.Paths.Topic(topic))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zs.Conn.Set(zs.Paths.Topic(topic), []byte("not a topic node"), -1); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the topic left the view", func() bool {
		m, err := admin.Metadata(context.Background(), topic)
		return err == nil && m.Topics[topic].Err != nil
	})
	// The brokers follow the view in order: once they follow a later
	// change (a new topic, copied by its follower), they have handled
	// this one.
	testenv.Eventually(t, 10*time.Second, "creating a later topic", func() bool {
		resp, err := admin.CreateTopic(context.Background(), 1, 2, nil, "later")
		return err == nil && resp.Err == nil
	})
	testenv.Eventually(t, 10*time.Second, "both brokers hold the later topic", func() bool {
		return hasPartitionDir(t, byID[1], "later") && hasPartitionDir(t, byID[2], "later")
	})
	for id, b := range byID {
		if !hasPartitionDir(t, b, topic) {
			t.Errorf("broker %d deleted the partition of a topic that was not deleted", id)
		}
	}

	// Deleted for real, through one broker: both remove their copies.
	if _, err := zs.Conn.Set(zs.Paths.Topic(topic), node, -1); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the topic deleted", func() bool {
		resp, err := admin.DeleteTopics(context.Background(), topic)
		return err == nil && resp.Error() == nil
	})
	testenv.Eventually(t, 10*time.Second, "both brokers removed their copies", func() bool {
		return !hasPartitionDir(t, byID[1], topic) && !hasPartitionDir(t, byID[2], topic)
	})
}
