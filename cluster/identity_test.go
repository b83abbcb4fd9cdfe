package cluster_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestZooKeeperIdentities: the cluster id is created once in /cluster/id
// and shared; a topic written without an id (by an older Tributary) gets
// one, stored in its assignment node; configs and growth made through one
// broker reach the other.
func TestZooKeeperIdentities(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	ctx := context.Background()
	s, err := cluster.DialZooKeeper(ctx, connect, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.EnsurePath(s.Paths.Topics()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conn.Create(s.Paths.Topic("old"), []byte(`{"version":1,"leaders":[1]}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	b1 := join(t, connect, 1)
	b2 := join(t, connect, 2)
	if b1.ClusterID() == "" || b1.ClusterID() != b2.ClusterID() {
		t.Fatalf("cluster ids %q and %q", b1.ClusterID(), b2.ClusterID())
	}
	data, _, err := s.Conn.Get(s.Paths.ClusterID())
	var node struct{ Version, ID string }
	if err != nil || json.Unmarshal(data, &node) != nil || node.ID != b1.ClusterID() || node.Version != "1" {
		t.Fatalf("/cluster/id holds %s (%v)", data, err)
	}

	var id cluster.TopicID
	testenv.Eventually(t, 5*time.Second, "the old topic has an id on both brokers", func() bool {
		t1, ok1 := b1.Topic("old")
		t2, ok2 := b2.Topic("old")
		id = t1.ID
		return ok1 && ok2 && !t1.ID.IsZero() && t1.ID == t2.ID
	})
	data, _, _ = s.Conn.Get(s.Paths.Topic("old"))
	if n, err := cluster.DecodeTopicNode(data); err != nil || n.ID != id {
		t.Errorf("assignment node %s does not hold the id %v", data, id)
	}

	if _, err := b1.SetTopicConfigs(ctx, "old", map[string]string{"retention.ms": "5000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b1.AddPartitions(ctx, "old", 3); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "broker 2 sees the configs and the partitions", func() bool {
		t2, _ := b2.Topic("old")
		return t2.Configs["retention.ms"] == "5000" && t2.Partitions() == 3
	})
	if _, err := b1.AddPartitions(ctx, "old", 2); err == nil {
		t.Error("shrinking a topic was accepted")
	}
}
