package consumer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/consumer"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A group of three consumers on 12 partitions over a 3-broker cluster:
// every partition has exactly one owner at every stable point, every
// message arrives, and when a member dies (kill -9) or leaves (Close) the
// others take over its partitions, repeating only records after its last
// committed offset.
func TestGroupOfThreeSurvivesKillAndClose(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Helper)
	connect, brokers := testenv.StartCluster(t, 3)
	client := newClient(t, brokers[0].Addr)
	const topic, group, parts = "events", "loaders", 12
	testenv.CreateTopic(t, client, topic, parts)
	testenv.ProduceRange(t, client, topic, 0, 1200)

	got := &deliveries{}
	a := join(t, consumer.Config{ZooKeeper: connect, Group: group, Topics: []string{topic}, ID: "c1"})
	b := join(t, consumer.Config{ZooKeeper: connect, Group: group, Topics: []string{topic}, ID: "c2"})
	consume(t, a, got)
	consume(t, b, got)
	killed := startHelper(t, connect, group, topic, "c3", time.Millisecond, got)

	owners := waitStable(t, connect, group, topic, parts, []string{"c1", "c2", "c3"}, a, b)
	for _, id := range []string{"c1", "c2", "c3"} {
		if n := count(owners, id); n != 4 {
			t.Fatalf("%s owns %d partitions, want 4: %v", id, n, owners)
		}
	}
	got.waitAll(t, 1200, 30*time.Second)

	// kill -9 the process member in the middle of its share of 600 new
	// records (about 200, at a millisecond each).
	testenv.ProduceRange(t, client, topic, 1200, 1800)
	time.Sleep(120 * time.Millisecond)
	killed.kill()
	before, mark := committed(t, connect, group, topic, parts), got.len()
	start := time.Now()
	owners = waitStable(t, connect, group, topic, parts, []string{"c1", "c2"}, a, b)
	takeover := time.Since(start)
	t.Logf("survivors owned c3's partitions %v after the kill (session timeout %v)", takeover.Round(time.Millisecond), sessionTimeout)
	if takeover > sessionTimeout+3*time.Second {
		t.Fatalf("takeover took %v, session timeout is %v", takeover, sessionTimeout)
	}
	if count(owners, "c1") != 6 || count(owners, "c2") != 6 {
		t.Fatalf("after the kill: %v, want 6 partitions each", owners)
	}
	testenv.ProduceRange(t, client, topic, 1800, 2400)
	got.waitAll(t, 2400, 30*time.Second)
	got.check(t, 2400)
	checkRepeatsAfter(t, got.repeatsSince(mark), before)
	t.Logf("kill -9: %d repeats, all after the last committed offset", len(got.repeatsSince(mark)))

	// Clean close of c2: its commits make the handover loss- and repeat-free
	// for what it processed.
	before, mark = committed(t, connect, group, topic, parts), got.len()
	if err := b.Close(); err != nil {
		t.Fatalf("closing c2: %v", err)
	}
	owners = waitStable(t, connect, group, topic, parts, []string{"c1"}, a)
	if count(owners, "c1") != parts {
		t.Fatalf("after c2 closed: %v", owners)
	}
	testenv.ProduceRange(t, client, topic, 2400, 3000)
	got.waitAll(t, 3000, 30*time.Second)
	repeats := got.check(t, 3000)
	checkRepeatsAfter(t, got.repeatsSince(mark), before)
	t.Logf("clean close: %d repeats; %d deliveries of 3000 messages in all", len(got.repeatsSince(mark)), 3000+repeats)
	t.Logf("c1 rebalances: %+v", a.Stats())
}

// Ten consumers joining at the same moment settle on one assignment without
// live-locking, within the retry bound.
func TestTenConsumersJoiningAtOnceSettle(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 1)
	client := newClient(t, brokers[0].Addr)
	const topic, group, parts = "herd", "herd", 12
	testenv.CreateTopic(t, client, topic, parts)

	var (
		mu      sync.Mutex
		members []*consumer.Group
		ids     []string
		wg      sync.WaitGroup
	)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Within a few tens of milliseconds, so that rebalances overlap
			// and members meet partitions others have not released yet.
			time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
			g := join(t, consumer.Config{ZooKeeper: connect, Group: group, Topics: []string{topic}, ID: fmt.Sprintf("m%02d", i)})
			mu.Lock()
			members = append(members, g)
			ids = append(ids, g.ID())
			mu.Unlock()
		}()
	}
	wg.Wait()
	owners := waitStable(t, connect, group, topic, parts, ids, members...)
	// 12 over 10: m00 and m01 take two, the rest one each.
	for _, id := range ids {
		want := 1
		if id == "m00" || id == "m01" {
			want = 2
		}
		if n := count(owners, id); n != want {
			t.Fatalf("%s owns %d partitions, want %d: %v", id, n, want, owners)
		}
	}
	// Settled means settled: nobody keeps rebalancing.
	snapshot := func() []int {
		var r []int
		for _, g := range members {
			r = append(r, g.Stats().Rebalances)
		}
		return r
	}
	s1 := snapshot()
	testenv.Consistently(t, time.Second, fmt.Sprintf("no member rebalances after settling at %v", s1), func() bool {
		return slices.Equal(s1, snapshot())
	})
	total, worst := 0, 0
	var report []string
	for _, g := range members {
		st := g.Stats()
		total += st.Rebalances
		worst = max(worst, st.MaxAttempts)
		report = append(report, fmt.Sprintf("%s:%d/%d", g.ID(), st.Rebalances, st.MaxAttempts))
	}
	t.Logf("10 consumers settled: %d rebalances in all, at most %d attempts in one (retries = attempts-1); per member rebalances/max attempts: %s",
		total, worst, strings.Join(report, " "))
}

// Groups do not share anything: each of two groups receives every message
// (publish/subscribe), while within a group each message goes to one
// member (point-to-point).
func TestTwoGroupsEachReceiveEveryMessage(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 3)
	client := newClient(t, brokers[0].Addr)
	const topic = "shared"
	testenv.CreateTopic(t, client, topic, 6)
	testenv.ProduceRange(t, client, topic, 0, 600)

	first, second := &deliveries{}, &deliveries{}
	consume(t, join(t, consumer.Config{ZooKeeper: connect, Group: "first", Topics: []string{topic}, ID: "a"}), first)
	consume(t, join(t, consumer.Config{ZooKeeper: connect, Group: "first", Topics: []string{topic}, ID: "b"}), first)
	consume(t, join(t, consumer.Config{ZooKeeper: connect, Group: "second", Topics: []string{topic}}), second)
	first.waitAll(t, 600, 30*time.Second)
	second.waitAll(t, 600, 30*time.Second)
	testenv.ProduceRange(t, client, topic, 600, 700)
	first.waitAll(t, 700, 30*time.Second)
	second.waitAll(t, 700, 30*time.Second)
	time.Sleep(200 * time.Millisecond)
	if n := first.check(t, 700); n > 0 {
		t.Fatalf("group first received %d repeats with no failure", n)
	}
	if n := second.check(t, 700); n > 0 {
		t.Fatalf("group second received %d repeats with no failure", n)
	}
}

// A new group starts at the smallest or the largest offset as configured;
// a group that comes back resumes at its committed offsets; Next blocks on
// an exhausted log and resumes when data arrives.
func TestStartPositionsAndResume(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 1)
	client := newClient(t, brokers[0].Addr)
	const topic = "positions"
	testenv.CreateTopic(t, client, topic, 3)
	testenv.ProduceRange(t, client, topic, 0, 30)

	oldest := &deliveries{}
	og := join(t, consumer.Config{ZooKeeper: connect, Group: "oldest", Topics: []string{topic}, Start: consumer.Smallest})
	consume(t, og, oldest)
	newest := &deliveries{}
	ng := join(t, consumer.Config{ZooKeeper: connect, Group: "newest", Topics: []string{topic}, Start: consumer.Largest})
	// Largest pins the end offsets at the first claim.
	if c := committed(t, connect, "newest", topic, 3); c[0]+c[1]+c[2] != 30 {
		t.Fatalf("Largest stored %v, want the end offsets (30 records in all)", c)
	}
	consume(t, ng, newest)
	oldest.waitAll(t, 30, 20*time.Second)

	// Nothing to read: Next blocks until the context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	probe := join(t, consumer.Config{ZooKeeper: connect, Group: "probe", Topics: []string{topic}, Start: consumer.Largest})
	if rec, err := probe.Next(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Next on an exhausted log: %v %v, want to block until the deadline", rec, err)
	}
	cancel()

	testenv.ProduceRange(t, client, topic, 30, 40)
	oldest.waitAll(t, 40, 20*time.Second)
	testenv.Eventually(t, 20*time.Second, "the Largest group got the 10 new records", func() bool { return newest.distinct() == 10 })
	for _, r := range newest.snapshot() {
		if v, _ := strconv.Atoi(r.value); v < 30 {
			t.Fatalf("the Largest group received an old record %q", r.value)
		}
	}

	// Leave and come back: the group resumes after what it processed.
	if err := og.Close(); err != nil {
		t.Fatal(err)
	}
	if c := committed(t, connect, "oldest", topic, 3); c[0]+c[1]+c[2] != 40 {
		t.Fatalf("after Close the offsets are %v, want 40 records in all", c)
	}
	again := &deliveries{}
	consume(t, join(t, consumer.Config{ZooKeeper: connect, Group: "oldest", Topics: []string{topic}}), again)
	testenv.ProduceRange(t, client, topic, 40, 45)
	testenv.Eventually(t, 20*time.Second, "the returning group got the 5 new records", func() bool { return again.distinct() == 5 })
	time.Sleep(200 * time.Millisecond)
	if n := len(again.snapshot()); n != 5 {
		t.Fatalf("the returning group received %d records, want only the 5 new ones: %v", n, again.snapshot())
	}
}

func TestJoinRejectsBadConfig(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []consumer.Config{
		{Group: "g", Topics: []string{"t"}},
		{ZooKeeper: "127.0.0.1:1/x", Topics: []string{"t"}},
		{ZooKeeper: "127.0.0.1:1/x", Group: "g"},
		{ZooKeeper: "127.0.0.1:1/x", Group: "g/h", Topics: []string{"t"}},
		{ZooKeeper: "127.0.0.1:1/x", Group: "g", Topics: []string{"t"}, ID: "a b"},
		{ZooKeeper: "127.0.0.1:1/x", Group: "g", Topics: []string{"t"}, Start: 7},
	} {
		if _, err := consumer.Join(ctx, cfg); err == nil {
			t.Errorf("Join(%+v) accepted a bad config", cfg)
		}
	}
}

// checkRepeatsAfter fails if a record was delivered again although its
// partition's committed offset had already passed it.
func checkRepeatsAfter(t *testing.T, dups []delivery, committed map[int32]int64) {
	t.Helper()
	for _, d := range dups {
		if c, ok := committed[d.partition]; ok && d.offset < c {
			t.Fatalf("record %d/%d (%s) repeated although offset %d was committed before", d.partition, d.offset, d.value, c)
		}
	}
}

func count(owners map[int32]string, id string) int {
	n := 0
	for _, o := range owners {
		if o == id {
			n++
		}
	}
	return n
}

// The available partitions are those of live brokers: when a broker leaves,
// the group rebalances over the rest and keeps consuming; when it comes
// back on its data, its partitions return with their offsets.
func TestGroupFollowsBrokersLeavingAndComingBack(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 3)
	client := newClient(t, brokers[0].Addr)
	const topic, parts = "moving", 12
	testenv.CreateTopic(t, client, topic, parts)
	testenv.ProduceRange(t, client, topic, 0, 600)

	got := &deliveries{}
	a := join(t, consumer.Config{ZooKeeper: connect, Group: "g", Topics: []string{topic}, ID: "a"})
	b := join(t, consumer.Config{ZooKeeper: connect, Group: "g", Topics: []string{topic}, ID: "b"})
	consume(t, a, got)
	consume(t, b, got)
	got.waitAll(t, 600, 30*time.Second)

	gone := brokers[2]
	gone.Stop()
	testenv.Eventually(t, 10*time.Second, "the group consumes only the 8 partitions of live brokers", func() bool {
		return len(a.Assigned()[topic])+len(b.Assigned()[topic]) == 8
	})
	testenv.StartClusterBroker(t, connect, 3, testenv.WithDataDir(gone.DataDir), testenv.WithAddr(gone.Addr))
	waitStable(t, connect, "g", topic, parts, []string{"a", "b"}, a, b)
	testenv.ProduceRange(t, newClient(t, brokers[0].Addr), topic, 600, 1200)
	got.waitAll(t, 1200, 30*time.Second)
	got.check(t, 1200)
}
