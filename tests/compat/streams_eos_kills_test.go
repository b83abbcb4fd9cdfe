package compat_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestKafkaStreamsExactlyOnceUnderKills runs Kafka Streams 4.4's word count
// with processing.guarantee=exactly_once_v2 (a repartition topic and a
// changelog-backed count, every topic replicated three ways) on three
// `tributary broker` processes, and round after round kill -9s the broker
// coordinating the application's transactions while it processes a batch
// of lines, restarts it, then kill -9s the application while it processes
// the next batch and starts a new instance (a new state directory: its
// counts come back from the changelog). Read at read_committed, every
// word's counts are 1, 2, 3, ... with no count repeated or skipped (a
// repeat is a record counted twice or an aborted transaction's output
// read), and each round ends with every word's count exactly its number of
// occurrences.
//
// Two rounds in make test; `SOAK_DURATION=10m` runs rounds for that long.
func TestKafkaStreamsExactlyOnceUnderKills(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary, testenv.JVM)
	rounds, until := 2, time.Time{}
	if s := os.Getenv("SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SOAK_DURATION=%q: %v", s, err)
		}
		rounds, until = 1<<30, time.Now().Add(d)
	}
	c := startProcessCluster(t, 3)
	const app, input, output = "wc-kills", "wck-lines", "wck-counts"
	c.createTopic(t, input, 2)
	c.createTopic(t, output, 2)
	producer := c.client(t)
	want := map[string]int64{}
	lines := 0
	produce := func() {
		t.Helper()
		var recs []*kgo.Record
		for range 30 {
			line := fmt.Sprintf("word%d common line%d", lines%7, lines)
			lines++
			for _, w := range strings.Fields(line) {
				want[w]++
			}
			recs = append(recs, &kgo.Record{Topic: input, Value: []byte(line)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing input lines: %v", err)
		}
	}
	counts := newCountChecker(c.client(t, kgo.ConsumeTopics(output), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(300*time.Millisecond)))

	seen := map[string]bool{} // transactional ids of earlier instances
	start := func() (*testenv.KafkaStreamsApp, string) {
		// Streams deletes processed repartition records at each commit,
		// so a broker back from a kill finds its log below its leader's
		// log start (TestFollowerBelowTheLeadersLogStartRejoins).
		a := testenv.StartKafkaStreamsWordCount(t, c.bootstrap(), app, input, output, "exactly_once_v2", "3")
		produce()
		id := c.newTransactionalID(t, app, seen, a)
		seen[id] = true
		return a, id
	}
	streams, id := start()
	counts.waitFor(t, want, streams)
	for round := 0; round < rounds && (until.IsZero() || time.Now().Before(until)); round++ {
		began := time.Now()
		produce()
		coord := c.leader(t, "__transaction_state", txn.PartitionFor(id, 50))
		c.kill(coord)
		t.Logf("round %d: killed broker %d, coordinator of %s, while it processed a batch", round, coord, id)
		c.waitLeader(t, "__transaction_state", txn.PartitionFor(id, 50), coord)
		c.start(t, coord)
		c.waitInSync(t)

		produce()
		streams.Kill()
		t.Logf("round %d: killed the application while it processed a batch", round)
		streams, id = start()
		counts.waitFor(t, want, streams)
		c.waitInSync(t)
		t.Logf("round %d: counts exact after %v (%d lines)", round, time.Since(began).Round(time.Millisecond), lines)
	}
	if err := streams.Close(); err != nil {
		t.Fatal(err)
	}
}

// countChecker reads the word counts at read_committed and checks that each
// word's counts go up by one.
type countChecker struct {
	cl   *kgo.Client
	last map[string]int64
}

func newCountChecker(cl *kgo.Client) *countChecker {
	return &countChecker{cl: cl, last: map[string]int64{}}
}

// waitFor reads until every word's last count is want's, failing on a
// count that is not the one after the word's previous count, when the
// application exits, or after three minutes.
func (c *countChecker) waitFor(t *testing.T, want map[string]int64, app *testenv.KafkaStreamsApp) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !maps.Equal(c.last, want) {
		select {
		case <-app.Done():
			t.Fatalf("the Kafka Streams application exited:\n%s", app.Output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the word counts were not exact within 3 minutes:\n got %v\nwant %v", c.last, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := c.cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			w, n := string(r.Key), int64(binary.BigEndian.Uint64(r.Value))
			if n != c.last[w]+1 {
				t.Fatalf("%q: count %d read after %d (offset %d of partition %d): a record counted twice or an aborted count read",
					w, n, c.last[w], r.Offset, r.Partition)
			}
			c.last[w] = n
		})
	}
}

// processCluster is n `tributary broker` processes on one ZooKeeper, each
// replicating every topic three ways with min.insync.replicas 2.
type processCluster struct {
	zk    string
	addrs []string
	dirs  []string
	procs []*testenv.Process
	adm   *kadm.Client
}

func startProcessCluster(t *testing.T, n int) *processCluster {
	c := &processCluster{zk: testenv.StartZooKeeper(t)}
	for range n {
		c.addrs = append(c.addrs, testenv.FreeAddr(t))
		c.dirs = append(c.dirs, t.TempDir())
		c.procs = append(c.procs, nil)
	}
	for id := int32(1); id <= int32(n); id++ {
		c.start(t, id)
	}
	c.adm = kadm.NewClient(c.client(t))
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("Metadata lists %d brokers", n), func() bool {
		md, err := c.adm.BrokerMetadata(context.Background())
		return err == nil && len(md.Brokers) == n
	})
	return c
}

func (c *processCluster) bootstrap() string { return strings.Join(c.addrs, ",") }

// client is a kgo client of the cluster, closed at the end of the test.
func (c *processCluster) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (c *processCluster) start(t *testing.T, id int32) {
	i := id - 1
	c.procs[i] = testenv.StartProcess(t, "broker", "--id", strconv.Itoa(int(id)), "--zookeeper", c.zk,
		"--listen", c.addrs[i], "--data-dir", c.dirs[i], "--min-insync-replicas", "2",
		"--default-replication-factor", "3", "--replica-lag-time-max", "5s")
	testenv.WaitListening(t, c.procs[i], c.addrs[i], 60*time.Second)
}

func (c *processCluster) kill(id int32) { c.procs[id-1].Kill() }

func (c *processCluster) createTopic(t *testing.T, topic string, partitions int32) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.adm.CreateTopic(ctx, partitions, 3, nil, topic); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	c.waitInSync(t)
}

// leader is the broker leading topic's partition p, once there is one.
func (c *processCluster) leader(t *testing.T, topic string, p int32) int32 {
	var leader int32 = -1
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("a leader of %s-%d", topic, p), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		md, err := c.adm.Metadata(ctx, topic)
		if err != nil || md.Topics[topic].Err != nil {
			return false
		}
		pd, ok := md.Topics[topic].Partitions[p]
		leader = pd.Leader
		return ok && pd.Err == nil && leader > 0
	})
	return leader
}

func (c *processCluster) waitLeader(t *testing.T, topic string, p, not int32) {
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("%s-%d led by a broker other than %d", topic, p, not), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		md, err := c.adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		pd := md.Topics[topic].Partitions[p]
		return pd.Err == nil && pd.Leader > 0 && pd.Leader != not
	})
}

// waitInSync waits until every partition of every topic is led with all
// its replicas in sync, so that the next kill leaves two in-sync replicas.
func (c *processCluster) waitInSync(t *testing.T) {
	testenv.Eventually(t, 90*time.Second, "every partition led with its replicas in sync", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		md, err := c.adm.Metadata(ctx)
		if err != nil {
			return false
		}
		for _, td := range md.Topics {
			if td.Err != nil {
				return false
			}
			for _, pd := range td.Partitions {
				if pd.Err != nil || pd.Leader < 0 || len(pd.ISR) != len(pd.Replicas) {
					return false
				}
			}
		}
		return true
	})
}

// newTransactionalID waits for the transactional id of a newly started
// Streams instance of app (one stream thread: one id), one not in seen.
func (c *processCluster) newTransactionalID(t *testing.T, app string, seen map[string]bool, a *testenv.KafkaStreamsApp) string {
	var id string
	testenv.Eventually(t, 2*time.Minute, "the new Streams instance's transactional id", func() bool {
		select {
		case <-a.Done():
			t.Fatalf("the Kafka Streams application exited:\n%s", a.Output())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		listed, _ := c.adm.ListTransactions(ctx, nil, nil) // a broker down leaves the others' answers
		for _, l := range listed {
			if strings.HasPrefix(l.TxnID, app+"-") && !seen[l.TxnID] {
				id = l.TxnID
				return true
			}
		}
		return false
	})
	return id
}
