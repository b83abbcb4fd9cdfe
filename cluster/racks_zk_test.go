package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A broker's rack is in its registry node, every member sees it, and a
// replicated topic created over two racks has each partition in both.
func TestRackInRegistrationAndPlacement(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	racks := map[int32]string{1: "east", 2: "east", 3: "west", 4: "west"}
	var members []*cluster.ZooKeeper
	for id := int32(1); id <= 4; id++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		z, err := cluster.JoinZooKeeper(ctx, connect, cluster.Broker{ID: id, Host: "127.0.0.1", Port: 20000 + id, Rack: racks[id]}, testLogger(t))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { z.Close() })
		members = append(members, z)
	}
	s := session(t, connect)
	data, _, err := s.Conn.Get(s.Paths.Broker(3))
	if err != nil {
		t.Fatal(err)
	}
	n, err := cluster.DecodeBrokerNode(data)
	if err != nil || n.Rack != "west" {
		t.Fatalf("registry node of broker 3: %s (%v), want rack west", data, err)
	}
	testenv.Eventually(t, 5*time.Second, "broker 1 sees every rack", func() bool {
		bs := members[0].Brokers()
		if len(bs) != 4 {
			return false
		}
		for _, b := range bs {
			if b.Rack != racks[b.ID] {
				return false
			}
		}
		return true
	})
	tp, err := members[0].CreateReplicatedTopic(context.Background(), "racked", 8, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for p, rs := range tp.Replicas {
		if racks[rs[0]] == racks[rs[1]] {
			t.Errorf("partition %d: replicas %v both in rack %s", p, rs, racks[rs[0]])
		}
	}
}
