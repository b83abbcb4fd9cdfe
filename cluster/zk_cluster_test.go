package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// Three brokers share one view: a topic created through one of them gets
// its 12 partitions spread over all three, every broker answers Metadata
// alike, and kgo produces to and consumes from all partitions with no
// special option.
func TestThreeBrokersServeOneTopicWithKgo(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 3)
	client := newClient(t, brokers[0].Addr)
	ctx := context.Background()
	testenv.CreateTopic(t, client, "spread", 12)

	// Every broker gives the same answer.
	var first string
	for _, b := range brokers {
		// The other brokers learn of the topic through their watches, a
		// moment after the one that created it answered.
		adm := kadm.NewClient(newClient(t, b.Addr))
		var meta kadm.Metadata
		testenv.Eventually(t, 10*time.Second, "broker at "+b.Addr+" to know topic spread", func() bool {
			m, err := adm.Metadata(ctx, "spread")
			meta = m
			return err == nil && len(m.Topics["spread"].Partitions) == 12
		})
		if len(meta.Brokers) != 3 {
			t.Fatalf("broker at %s lists %d brokers, want 3", b.Addr, len(meta.Brokers))
		}
		leaders := map[int32]int{}
		for _, p := range meta.Topics["spread"].Partitions {
			leaders[p.Leader]++
		}
		if fmt.Sprint(leaders) != "map[1:4 2:4 3:4]" {
			t.Fatalf("broker at %s: leaders per broker %v, want 4 partitions on each of 1, 2, 3", b.Addr, leaders)
		}
		got := fmt.Sprint(meta.Topics["spread"].Partitions.Sorted())
		if first == "" {
			first = got
		} else if got != first {
			t.Fatalf("brokers disagree on the assignment:\n%s\n%s", first, got)
		}
	}
	// The assignment is in ZooKeeper.
	s := session(t, connect)
	if ok, _, err := s.Conn.Exists(s.Paths.Topic("spread")); !ok || err != nil {
		t.Fatalf("topic node missing: %v %v", ok, err)
	}

	const n = 1200
	testenv.ProduceRange(t, client, "spread", 0, n)
	got := consumeAll(t, brokers[1].Addr, "spread", n)
	for i := range n {
		if got[fmt.Sprint(i)] != 1 {
			t.Fatalf("value %d received %d times", i, got[fmt.Sprint(i)])
		}
	}
}

// kcat (librdkafka) round-trips through the cluster too: it produces with
// its own partitioner to all three brokers and reads every partition back.
func TestThreeBrokersServeKcat(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Kcat)
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is missing: run apt-get install -y kcat (.ci/run does)")
	}
	_, brokers := testenv.StartCluster(t, 3)
	client := newClient(t, brokers[0].Addr)
	testenv.CreateTopic(t, client, "kcat", 12)
	bootstrap := brokers[2].Addr
	var in bytes.Buffer
	const n = 300
	for i := range n {
		fmt.Fprintf(&in, "key-%d:value-%d\n", i, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := exec.CommandContext(ctx, "kcat", "-P", "-b", bootstrap, "-t", "kcat", "-K:")
	prod.Stdin = &in
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	cons := exec.CommandContext(ctx, "kcat", "-C", "-b", bootstrap, "-t", "kcat", "-o", "beginning", "-e", "-q", "-f", "%p %k %s\n")
	out, err := cons.Output()
	if err != nil {
		t.Fatalf("kcat -C: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != n {
		t.Fatalf("kcat read %d records, want %d", len(lines), n)
	}
	partitions := map[string]bool{}
	for _, l := range lines {
		partitions[strings.Fields(l)[0]] = true
	}
	if len(partitions) < 10 {
		t.Fatalf("keyed records landed on only %d of 12 partitions", len(partitions))
	}
	// kgo, with the same (murmur2) key hashing, reads them back too.
	got := consumeAll(t, brokers[0].Addr, "kcat", n)
	if got["value-0"] != 1 || got[fmt.Sprintf("value-%d", n-1)] != 1 {
		t.Fatalf("kgo did not read kcat's records back: %d distinct values", len(got))
	}
}

// A broker that goes away leaves the registry and Metadata; partitions on
// the others keep serving; restarted on its data it serves its old records.
func TestBrokerLeavesAndComesBackWithItsData(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 3)
	client := newClient(t, brokers[0].Addr)
	testenv.CreateTopic(t, client, "survive", 12)
	const n = 600
	testenv.ProduceRange(t, client, "survive", 0, n)

	gone := brokers[2]
	gone.Stop()
	s := session(t, connect)
	testenv.Eventually(t, 2*testenv.ClusterSessionTimeout, "broker 3's registry node is gone", func() bool {
		ok, _, _ := s.Conn.Exists(s.Paths.Broker(3))
		return !ok
	})
	adm := kadm.NewClient(newClient(t, brokers[0].Addr))
	testenv.Eventually(t, 30*time.Second, "Metadata stops listing broker 3", func() bool {
		meta, err := adm.Metadata(context.Background())
		return err == nil && len(meta.Brokers) == 2
	})
	// The partitions of brokers 1 and 2 still take and serve records.
	live := map[int32]bool{}
	meta, err := adm.Metadata(context.Background(), "survive")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range meta.Topics["survive"].Partitions {
		if p.Leader == 1 || p.Leader == 2 {
			live[p.Partition] = true
		}
	}
	if len(live) != 8 {
		t.Fatalf("%d partitions outside broker 3, want 8", len(live))
	}
	c2 := newClient(t, brokers[1].Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range live {
		r := &kgo.Record{Topic: "survive", Partition: p, Value: []byte(fmt.Sprintf("after-%d", p))}
		if err := c2.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatalf("producing to partition %d on a live broker: %v", p, err)
		}
	}

	back := testenv.StartClusterBroker(t, connect, 3, testenv.WithDataDir(gone.DataDir), testenv.WithAddr(gone.Addr))
	testenv.Eventually(t, 5*time.Second, "broker 3 is listed again", func() bool {
		meta, err := adm.Metadata(context.Background())
		return err == nil && len(meta.Brokers) == 3
	})
	got := consumeAll(t, back.Addr, "survive", n+len(live))
	for i := range n {
		if got[fmt.Sprint(i)] != 1 {
			t.Fatalf("value %d received %d times after the restart", i, got[fmt.Sprint(i)])
		}
	}
}

func newClient(t *testing.T, seed string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seed)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// consumeAll reads topic from the start with a fresh client until it has
// n records, and counts each value.
func consumeAll(t *testing.T, seed, topic string, n int) map[string]int {
	t.Helper()
	cl := newClient(t, seed, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string]int{}
	total := 0
	for total < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records from %s: %v", total, n, topic, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Value)]++
			total++
		})
	}
	return got
}
