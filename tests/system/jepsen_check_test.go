package system_test

// The Jepsen-style test's clients and checks: a producer per partition
// writing increasing sequence numbers, a group consumer that watches its
// offsets, and the readers of the final state (through the brokers and
// straight from the replicas' segment files).

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type jepsenProducer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	acked    map[int32][]int       // sequence numbers acknowledged, per partition
	ackTimes map[int32][]time.Time // when, in the same order
	fault    map[int32]chan struct{}
}

// newJepsenProducer starts one goroutine per partition producing values
// 0, 1, 2, ... with acks=all and idempotence (kgo's default with
// acks=all), uncompressed so that the segment files can be read as is.
func newJepsenProducer(t *testing.T, seeds []string, topic string, partitions int) *jepsenProducer {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(200),
		kgo.RecordDeliveryTimeout(45*time.Second), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr := &jepsenProducer{cl: cl, cancel: cancel, acked: map[int32][]int{}, ackTimes: map[int32][]time.Time{}, fault: map[int32]chan struct{}{}}
	for p := range int32(partitions) {
		pr.wg.Add(1)
		go func() {
			defer pr.wg.Done()
			// At most one record per millisecond and partition: enough to
			// keep every replica busy, and a soak's bookkeeping stays
			// within memory.
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for seq := 0; ctx.Err() == nil; seq++ {
				select {
				case <-tick.C:
				case <-ctx.Done():
					return
				}
				rec := &kgo.Record{Partition: p, Value: []byte(strconv.Itoa(seq))}
				cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
					if err != nil {
						return // not acknowledged: may or may not be there
					}
					v, _ := strconv.Atoi(string(r.Value))
					pr.mu.Lock()
					pr.acked[p] = append(pr.acked[p], v)
					pr.ackTimes[p] = append(pr.ackTimes[p], time.Now())
					if ch := pr.fault[p]; ch != nil {
						close(ch)
						pr.fault[p] = nil
					}
					pr.mu.Unlock()
				})
			}
		}()
	}
	return pr
}

// markFault arms the notification of the next acknowledgement on p.
func (pr *jepsenProducer) markFault(p int32) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.fault[p] = make(chan struct{})
}

// waitAckAfter returns how long after since the first acknowledgement
// on p came (markFault armed it).
func (pr *jepsenProducer) waitAckAfter(p int32, since time.Time, within time.Duration) (time.Duration, bool) {
	pr.mu.Lock()
	ch := pr.fault[p]
	pr.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-time.After(within):
			return 0, false
		}
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	times := pr.ackTimes[p]
	i := sort.Search(len(times), func(i int) bool { return times[i].After(since) })
	if i == len(times) {
		return 0, false
	}
	return times[i].Sub(since), true
}

// stop ends producing and waits for the records in flight.
func (pr *jepsenProducer) stop(t *testing.T) {
	pr.cancel()
	pr.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := pr.cl.Flush(ctx); err != nil {
		t.Logf("flushing the producer: %v (records still in flight count as not acknowledged)", err)
	}
	pr.cl.Close()
}

// check checks that every acknowledged value is in final exactly once and
// that acknowledged values are in production order; it returns how many
// were acknowledged.
func (pr *jepsenProducer) check(t *testing.T, final map[int32]map[int64]string) int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	total := 0
	for p, acked := range pr.acked {
		total += len(acked)
		offsets := map[string][]int64{}
		for o, v := range final[p] {
			offsets[v] = append(offsets[v], o)
		}
		prev, prevV := int64(-1), -1
		sorted := append([]int(nil), acked...)
		sort.Ints(sorted)
		for _, v := range sorted {
			at := offsets[strconv.Itoa(v)]
			if len(at) != 1 {
				t.Errorf("partition %d: acknowledged record %d is at offsets %v, want exactly one", p, v, at)
				continue
			}
			if at[0] <= prev {
				t.Errorf("partition %d: acknowledged record %d at offset %d, before record %d at %d", p, v, at[0], prevV, prev)
			}
			prev, prevV = at[0], v
		}
	}
	return total
}

type jepsenConsumer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	last       map[int32]int64 // last offset seen in the current assignment
	seen       map[int32]map[int64]string
	backwards  []string
	records    int
	progressed chan struct{}
}

// newJepsenConsumer runs a group consumer over the topic.
func newJepsenConsumer(t *testing.T, seeds []string, topic string) *jepsenConsumer {
	c := &jepsenConsumer{last: map[int32]int64{}, seen: map[int32]map[int64]string{}, done: make(chan struct{}), progressed: make(chan struct{}, 1)}
	forget := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, p := range ps[topic] {
			delete(c.last, p) // a new assignment starts at the committed offset
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("jepsen"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.OnPartitionsAssigned(forget),
		kgo.OnPartitionsRevoked(forget), kgo.OnPartitionsLost(forget))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cl, c.cancel = cl, cancel
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			c.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				c.records++
				if last, ok := c.last[r.Partition]; ok && r.Offset <= last {
					c.backwards = append(c.backwards, fmt.Sprintf("partition %d: offset %d after %d", r.Partition, r.Offset, last))
				}
				c.last[r.Partition] = r.Offset
				if c.seen[r.Partition] == nil {
					c.seen[r.Partition] = map[int64]string{}
				}
				c.seen[r.Partition][r.Offset] = string(r.Value)
			})
			c.mu.Unlock()
			select {
			case c.progressed <- struct{}{}:
			default:
			}
		}
	}()
	return c
}

// stopAt waits until the consumer has seen every partition up to end,
// then stops it.
func (c *jepsenConsumer) stopAt(t *testing.T, end map[int32]int64, within time.Duration) {
	deadline := time.After(within)
	for {
		c.mu.Lock()
		caughtUp := true
		for p, e := range end {
			if e > 0 && c.seen[p][e-1] == "" {
				caughtUp = false
			}
		}
		c.mu.Unlock()
		if caughtUp {
			break
		}
		select {
		case <-c.progressed:
		case <-time.After(time.Second):
		case <-deadline:
			t.Errorf("the consumer did not reach the end offsets %v within %v", end, within)
			c.cancel()
			<-c.done
			c.cl.Close()
			return
		}
	}
	c.cancel()
	<-c.done
	c.cl.Close()
}

func (c *jepsenConsumer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.records
}

// check: no offset went backwards within an assignment, and every
// record the consumer saw below end is the one at that offset in final,
// read up to end (it never saw a record that was later lost). Records at
// end or above are the last ones the producer sent before it stopped,
// whose requests were answered (so not acknowledged) before the high
// watermark passed them: final does not cover them.
func (c *jepsenConsumer) check(t *testing.T, final map[int32]map[int64]string, end map[int32]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.backwards {
		t.Errorf("consumer went backwards: %s", b)
	}
	for p, seen := range c.seen {
		for o, v := range seen {
			if o < end[p] && final[p][o] != v {
				t.Errorf("partition %d offset %d: the consumer saw %q, the log holds %q: a consumed record was lost", p, o, v, final[p][o])
			}
		}
	}
}

// readPartitions reads each partition from its start to end through the
// brokers: offset → value.
func readPartitions(t *testing.T, seeds []string, topic string, end map[int32]int64) map[int32]map[int64]string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[int32]map[int64]string{}
	for p := range end {
		out[p] = map[int64]string{}
	}
	done := func() bool {
		for p, e := range end {
			if e > 0 && out[p][e-1] == "" {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the partitions to %v: %v", end, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end[r.Partition] {
				out[r.Partition][r.Offset] = string(r.Value)
			}
		})
	}
	return out
}

// compareReplicas reads each partition's segment files on every broker
// and checks that the replicas hold the same record at every offset they
// all have.
func compareReplicas(t *testing.T, dirs map[int32]string, topic string, partitions int) {
	for p := range partitions {
		logs := map[int32]map[int64][]byte{}
		var lo, hi int64 = 0, -1
		for id, dir := range dirs {
			recs, err := readSegments(filepath.Join(dir, fmt.Sprintf("%s-%d", topic, p)))
			if err != nil {
				t.Fatalf("broker %d, partition %d: %v", id, p, err)
			}
			logs[id] = recs
			first, next := offsetRange(recs)
			lo = max(lo, first)
			if hi < 0 || next < hi {
				hi = next
			}
		}
		t.Logf("partition %d: comparing %d replicas over offsets [%d, %d)", p, len(logs), lo, hi)
		diverged := 0
		for o := lo; o < hi; o++ {
			var want []byte
			var from int32
			for id, recs := range logs {
				got, ok := recs[o]
				if !ok {
					continue // compacted or a gap: nothing to compare
				}
				if want == nil {
					want, from = got, id
					continue
				}
				if !bytes.Equal(got, want) {
					if diverged++; diverged <= 5 {
						t.Logf("partition %d offset %d: broker %d holds %q, broker %d holds %q", p, o, from, want, id, got)
					}
				}
			}
		}
		// This assertion needs leader-epoch truncation: a leader killed
		// with records its followers had not fetched keeps them when it
		// returns as a follower, at offsets where the new leader wrote
		// others. It holds once returning replicas truncate to the point
		// where their log diverged from the leader's (OffsetForLeaderEpoch).
		if diverged > 0 {
			t.Errorf("partition %d: the replicas disagree at %d of the offsets [%d, %d) they share (replicas diverge until leader-epoch truncation is in)", p, diverged, lo, hi)
		}
	}
}

// readSegments reads the records of a partition directory's segment
// files (uncompressed batches): offset → key and value.
func readSegments(dir string) (map[int64][]byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := map[int64][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for len(data) >= 12 {
			n := int(int32(binary.BigEndian.Uint32(data[8:12])))
			if n <= 0 || 12+n > len(data) {
				break // a torn tail, never acknowledged
			}
			var b kmsg.RecordBatch
			if err := b.ReadFrom(data[:12+n]); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			data = data[12+n:]
			if b.Attributes&0x0007 != 0 || b.Attributes&0x0020 != 0 {
				continue // compressed or control: not written by this test's producer
			}
			recs := b.Records
			for i := int32(0); i < b.NumRecords && len(recs) > 0; i++ {
				l, k := binary.Varint(recs)
				if k <= 0 || int(l) > len(recs)-k {
					return nil, fmt.Errorf("%s: batch at offset %d: bad record length", f, b.FirstOffset)
				}
				var r kmsg.Record
				if err := r.ReadFrom(recs[:k+int(l)]); err != nil {
					return nil, fmt.Errorf("%s: batch at offset %d: %w", f, b.FirstOffset, err)
				}
				out[b.FirstOffset+int64(r.OffsetDelta)] = append(append([]byte(nil), r.Key...), r.Value...)
				recs = recs[k+int(l):]
			}
		}
	}
	return out, nil
}

func offsetRange(recs map[int64][]byte) (first, next int64) {
	first = -1
	for o := range recs {
		if first < 0 || o < first {
			first = o
		}
		next = max(next, o+1)
	}
	return max(first, 0), next
}
