package consumer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/consumer"
	"github.com/tributary-io/tributary/internal/testenv"
)

// holdPartition makes a "ghost" consumer own a partition of the group, as a
// member that is slow to release would.
func holdPartition(t *testing.T, connect, group, topic string, p int32) (release func()) {
	t.Helper()
	s, err := cluster.DialZooKeeper(context.Background(), connect, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.EnsurePath(s.Paths.Owners(group, topic)); err != nil {
		t.Fatal(err)
	}
	path := s.Paths.Owner(group, topic, p)
	if _, err := s.Conn.Create(path, []byte("ghost"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return func() { s.Conn.Delete(path, -1) }
}

// A conflict releases everything, backs off and retries; once the other
// owner lets go, the claim succeeds.
func TestConflictIsRetriedUntilTheOwnerLetsGo(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 1)
	testenv.CreateTopic(t, newClient(t, brokers[0].Addr), "contested", 4)
	release := holdPartition(t, connect, "g", "contested", 2)
	time.AfterFunc(400*time.Millisecond, release)

	g := join(t, consumer.Config{ZooKeeper: connect, Group: "g", Topics: []string{"contested"}})
	st := g.Stats()
	if st.LastAttempts < 2 {
		t.Fatalf("joined after %d attempts, want a retry while the ghost held partition 2", st.LastAttempts)
	}
	t.Logf("claimed after %d attempts", st.LastAttempts)
	if got := g.Assigned()["contested"]; len(got) != 4 {
		t.Fatalf("owns %v, want all 4 partitions", got)
	}
}

// Retries are bounded: a partition that never comes free ends in an error
// that names it and its owner, and the consumer leaves the group.
func TestConflictRetriesAreBounded(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 1)
	testenv.CreateTopic(t, newClient(t, brokers[0].Addr), "stuck", 4)
	holdPartition(t, connect, "g", "stuck", 1)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := consumer.Join(ctx, consumer.Config{
		ZooKeeper: connect, Group: "g", Topics: []string{"stuck"}, ID: "me",
		RebalanceRetries: 3, RebalanceBackoff: 20 * time.Millisecond, Logger: testLogger(t),
	})
	if err == nil || !strings.Contains(err.Error(), "after 3 attempts") || !strings.Contains(err.Error(), `stuck/1 is still owned by consumer "ghost"`) {
		t.Fatalf("Join with a partition held forever: %v", err)
	}
	s, err := cluster.DialZooKeeper(context.Background(), connect, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ok, _, _ := s.Conn.Exists(s.Paths.Consumer("g", "me")); ok {
		t.Fatal("the failed consumer is still registered")
	}
	for p := range int32(4) {
		data, _, _ := s.Conn.Get(s.Paths.Owner("g", "stuck", p))
		if string(data) == "me" {
			t.Fatalf("the failed consumer still owns partition %d", p)
		}
	}
}

// A consumer cut off from ZooKeeper long enough to lose its session stops
// delivering, the others take its partitions, and once it is back it
// re-registers and the group shares the partitions again, losing nothing.
func TestConsumerSessionExpiry(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 1)
	client := newClient(t, brokers[0].Addr)
	const topic, parts = "expiry", 6
	testenv.CreateTopic(t, client, topic, parts)
	testenv.ProduceRange(t, client, topic, 0, 300)

	link := &testenv.NetLink{}
	got := &deliveries{}
	a := join(t, consumer.WithZKOptions(consumer.Config{ZooKeeper: connect, Group: "g", Topics: []string{topic}, ID: "a"}, cluster.WithDialer(link.Dial)))
	b := join(t, consumer.Config{ZooKeeper: connect, Group: "g", Topics: []string{topic}, ID: "b"})
	consume(t, a, got)
	consume(t, b, got)
	waitStable(t, connect, "g", topic, parts, []string{"a", "b"}, a, b)
	got.waitAll(t, 300, 20*time.Second)

	link.Cut()
	testenv.Eventually(t, 10*time.Second, "b owns everything and a nothing", func() bool {
		return len(b.Assigned()[topic]) == parts && len(a.Assigned()[topic]) == 0
	})
	testenv.ProduceRange(t, client, topic, 300, 600)
	got.waitAll(t, 600, 20*time.Second)

	link.Heal()
	testenv.Eventually(t, 20*time.Second, "a is back with half the partitions", func() bool { return len(a.Assigned()[topic]) == parts/2 })
	owners := waitStable(t, connect, "g", topic, parts, []string{"a", "b"}, a, b)
	if count(owners, "a") != 3 {
		t.Fatalf("after a came back: %v", owners)
	}
	testenv.ProduceRange(t, client, topic, 600, 900)
	got.waitAll(t, 900, 20*time.Second)
	got.check(t, 900)
	if err := a.Close(); err != nil && !errors.Is(err, consumer.ErrClosed) {
		t.Logf("closing a: %v", err)
	}
}
