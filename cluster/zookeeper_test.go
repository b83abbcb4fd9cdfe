package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

func TestZooKeeperBrokersSeeEachOther(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	b1 := join(t, connect, 1)
	b2 := join(t, connect, 2)
	want := []cluster.Broker{b1.Self(), b2.Self()}
	for _, b := range []*cluster.ZooKeeper{b1, b2} {
		testenv.Eventually(t, 5*time.Second, fmt.Sprintf("broker %d lists both brokers", b.Self().ID), func() bool {
			return reflect.DeepEqual(b.Brokers(), want)
		})
	}
}

func TestZooKeeperTopicsAreSharedAndSpread(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	b1 := join(t, connect, 1)
	b2 := join(t, connect, 2)
	b3 := join(t, connect, 3)
	for _, b := range []*cluster.ZooKeeper{b1, b2, b3} {
		testenv.Eventually(t, 5*time.Second, "three brokers", func() bool { return len(b.Brokers()) == 3 })
	}
	ctx := context.Background()
	changed := b2.Changed()
	created, err := b1.CreateTopic(ctx, "events", 12, map[string]string{"retention.ms": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	// Read-your-writes on the creating broker.
	if got, ok := b1.Topic("events"); !ok || !reflect.DeepEqual(got, created) {
		t.Fatalf("creating broker's view: %+v %v, want %+v", got, ok, created)
	}
	perBroker := map[int32]int{}
	for _, l := range created.Leaders {
		perBroker[l]++
	}
	if !reflect.DeepEqual(perBroker, map[int32]int{1: 4, 2: 4, 3: 4}) {
		t.Fatalf("12 partitions over 3 brokers: %v", perBroker)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("another broker's Changed channel did not close after CreateTopic")
	}
	testenv.Eventually(t, 5*time.Second, "every broker sees the topic", func() bool {
		for _, b := range []*cluster.ZooKeeper{b2, b3} {
			if got, ok := b.Topic("events"); !ok || !reflect.DeepEqual(got, created) {
				return false
			}
		}
		return true
	})
	if _, err := b3.CreateTopic(ctx, "events", 3, nil); !errors.Is(err, cluster.ErrTopicExists) {
		t.Fatalf("creating it again: %v, want ErrTopicExists", err)
	}

	// Each broker's registry node lists the partitions it stores.
	s := session(t, connect)
	data, _, err := s.Conn.Get(s.Paths.Broker(2))
	if err != nil {
		t.Fatal(err)
	}
	node, err := cluster.DecodeBrokerNode(data)
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	for p, l := range created.Leaders {
		if l == 2 {
			want = append(want, int32(p))
		}
	}
	testenv.Eventually(t, 5*time.Second, "broker 2's node lists its partitions", func() bool {
		data, _, _ := s.Conn.Get(s.Paths.Broker(2))
		node, _ = cluster.DecodeBrokerNode(data)
		return reflect.DeepEqual(node.Topics["events"], want)
	})
	if node.Host != b2.Self().Host || node.Port != b2.Self().Port {
		t.Fatalf("broker 2's node: %+v, want host/port of %+v", node, b2.Self())
	}

	if err := b2.DeleteTopic(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	if _, ok := b2.Topic("events"); ok {
		t.Fatal("deleting broker still sees the topic")
	}
	testenv.Eventually(t, 5*time.Second, "every broker sees the deletion", func() bool {
		_, ok1 := b1.Topic("events")
		_, ok3 := b3.Topic("events")
		return !ok1 && !ok3
	})
	if err := b1.DeleteTopic(ctx, "events"); !errors.Is(err, cluster.ErrUnknownTopic) {
		t.Fatalf("deleting it again: %v, want ErrUnknownTopic", err)
	}
	if _, err := b1.CreateTopic(ctx, "a/b", 1, nil); err == nil {
		t.Fatal("a topic name with '/' was accepted")
	}
	if _, err := b1.CreateTopic(ctx, "zero", 0, nil); err == nil {
		t.Fatal("a topic with 0 partitions was accepted")
	}
}

func TestZooKeeperConcurrentCreateHasOneWinner(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	members := []*cluster.ZooKeeper{join(t, connect, 1), join(t, connect, 2), join(t, connect, 3)}
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	for i, b := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.CreateTopic(context.Background(), "race", 4, nil)
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, cluster.ErrTopicExists):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d brokers created the same topic, want exactly 1", wins)
	}
}

func TestZooKeeperCloseRemovesBrokerAtOnce(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	b1 := join(t, connect, 1)
	b2 := join(t, connect, 2, cluster.WithSessionTimeout(20*time.Second))
	testenv.Eventually(t, 5*time.Second, "two brokers", func() bool { return len(b1.Brokers()) == 2 })
	b2.Close()
	// Far less than b2's 20s session timeout: a clean close ends the session.
	testenv.Eventually(t, 3*time.Second, "broker 2 gone after Close", func() bool {
		return reflect.DeepEqual(b1.Brokers(), []cluster.Broker{b1.Self()})
	})
}

func TestZooKeeperSessionExpiryReRegisters(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	b1 := join(t, connect, 1)
	link := &testenv.NetLink{}
	b2 := join(t, connect, 2, cluster.WithSessionTimeout(time.Second), cluster.WithDialer(link.Dial))
	testenv.Eventually(t, 5*time.Second, "two brokers", func() bool { return len(b1.Brokers()) == 2 })

	link.Cut()
	testenv.Eventually(t, 10*time.Second, "broker 2 expired", func() bool { return len(b1.Brokers()) == 1 })
	// A topic created while broker 2 is cut off reaches it after it is back.
	if _, err := b1.CreateTopic(context.Background(), "while-away", 2, nil); err != nil {
		t.Fatal(err)
	}
	link.Heal()
	testenv.Eventually(t, 15*time.Second, "broker 2 re-registered", func() bool { return len(b1.Brokers()) == 2 })
	testenv.Eventually(t, 10*time.Second, "broker 2 sees the topic created while it was away", func() bool {
		_, ok := b2.Topic("while-away")
		return ok && len(b2.Brokers()) == 2
	})
}

// A broker whose registry node disappears while its session lives on (an
// operator's delete, or a node lost with a session the broker did not
// notice replaced) registers again instead of running on unlisted.
func TestZooKeeperRegistersAgainWhenItsNodeIsGone(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	b1 := join(t, connect, 1)
	b2 := join(t, connect, 2)
	testenv.Eventually(t, 5*time.Second, "two brokers", func() bool { return len(b1.Brokers()) == 2 })

	admin := session(t, connect)
	if err := admin.Conn.Delete(admin.Paths.Broker(2), -1); err != nil {
		t.Fatal(err)
	}
	testenv.Eventuallyf(t, 10*time.Second, func() (bool, string) {
		ok, _, err := admin.Conn.Exists(admin.Paths.Broker(2))
		return ok && err == nil && len(b1.Brokers()) == 2 && b2.Registered() == nil,
			fmt.Sprintf("node exists %v (%v), broker 1 sees %v, broker 2: %v", ok, err, b1.Brokers(), b2.Registered())
	})
}

func TestZooKeeperRestartedBrokerWaitsForItsOldSession(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	b1 := join(t, connect, 1)
	link := &testenv.NetLink{}
	join(t, connect, 2, cluster.WithSessionTimeout(time.Second), cluster.WithDialer(link.Dial))
	testenv.Eventually(t, 5*time.Second, "two brokers", func() bool { return len(b1.Brokers()) == 2 })

	// Broker 2 "crashes" (its connection goes silent, its session lingers)
	// and restarts on another port before ZooKeeper noticed.
	link.Cut()
	start := time.Now()
	restarted := join(t, connect, 2, cluster.WithSessionTimeout(time.Second))
	t.Logf("re-registration waited %v for the old session to expire", time.Since(start).Round(time.Millisecond))
	testenv.Eventually(t, 5*time.Second, "broker 1 sees the restarted broker 2", func() bool {
		bs := b1.Brokers()
		return len(bs) == 2 && reflect.DeepEqual(bs[1], restarted.Self())
	})
}

func TestZooKeeperRefusesADuplicateLiveID(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	join(t, connect, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := cluster.JoinZooKeeper(ctx, connect, cluster.Broker{ID: 1, Host: "127.0.0.1", Port: 1}, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "same id") {
		t.Fatalf("joining with a live broker's id: %v, want an error naming the id clash", err)
	}
}

func TestZooKeeperCreatesItsChroot(t *testing.T) {
	connect := testenv.StartZooKeeper(t) + "/deeper/cluster"
	b := join(t, connect, 7)
	if got := b.Brokers(); len(got) != 1 || got[0].ID != 7 {
		t.Fatalf("brokers in a fresh chroot: %+v", got)
	}
	if _, err := cluster.JoinZooKeeper(context.Background(), "127.0.0.1:1/x", cluster.Broker{ID: 1}, nil); err == nil {
		t.Fatal("a broker without host and port was accepted")
	}
}

func TestZooKeeperUnreachableFailsWithContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = cluster.JoinZooKeeper(ctx, addr+"/t", cluster.Broker{ID: 1, Host: "h", Port: 1}, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "is ZooKeeper running") {
		t.Fatalf("joining an unreachable ZooKeeper: %v", err)
	}
}

// join makes a cluster member on a port nobody listens on: these tests are
// about the registry, not about serving.
func join(t *testing.T, connect string, id int32, opts ...cluster.ZKOption) *cluster.ZooKeeper {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	self := cluster.Broker{ID: id, Host: "127.0.0.1", Port: 10000 + id + int32(time.Now().UnixNano()%1000)}
	z, err := cluster.JoinZooKeeper(ctx, connect, self, testLogger(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}

func session(t *testing.T, connect string) *cluster.ZKSession {
	t.Helper()
	s, err := cluster.DialZooKeeper(context.Background(), connect, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func testLogger(t *testing.T) *slog.Logger { return testenv.Logger(t, slog.LevelInfo) }

// DiscoverBrokers skips a broker registration it cannot read, and says
// which: otherwise a client finding fewer brokers than registered has
// nothing to go on.
func TestDiscoverBrokersWarnsOfUnreadableRegistration(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	join(t, connect, 1)
	s := session(t, connect)
	path := s.Paths.BrokerIDs() + "/2"
	if _, err := s.Conn.Create(path, []byte(`{"id":2,"host":"","port":9092}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	brokers, err := cluster.DiscoverBrokers(context.Background(), connect, logs.logger(t))
	if err != nil || len(brokers) != 1 || brokers[0].ID != 1 {
		t.Fatalf("DiscoverBrokers: %+v, %v; want broker 1", brokers, err)
	}
	if n := logs.count("skipping unreadable broker registration", "path="+path, "no host"); n != 1 {
		t.Errorf("%d warnings naming %s, want 1", n, path)
	}
}
