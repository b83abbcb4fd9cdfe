package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestProduceNamingMorePartitionsThanStayOpen: one acks=all produce naming
// every partition of a broker whose descriptors keep only a third of them
// open, before and after a restart, is answered within the client's
// request timeout. Each partition the request opens pushes out one it
// opened a moment before, and closing a log costs fsyncs; closed one after
// the other on the request's goroutine, the closes made every such request
// outlast the client's timeout, so the client retried for ever and was
// never answered, although every record was written. The disk here takes
// 5 ms an fsync, as a cloud volume may.
func TestProduceNamingMorePartitionsThanStayOpen(t *testing.T) {
	testenv.Slow(t, "produces twice to 300 partitions on a disk of 5 ms fsyncs")
	dir := t.TempDir()
	disk := &slowDisk{delay: 5 * time.Millisecond}
	cfg := testenv.WithConfig(func(c *broker.Config) {
		c.MaxPartitionFiles = 150 // 50 logs of one segment
		c.Log.FS = disk
	})
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), cfg)
	const topics, parts = 60, 5
	names := createNumberedTopics(t, b.Addr, "many", topics, parts)
	produceToAll := func(addr string, round int) {
		t.Helper()
		// A client that gives up on a request after 10 s (half of
		// franz-go's default) and retries its records until the context
		// ends. The old code took 13-16 s a round here, this one 4.
		cl := manualPartitionClient(t, addr, kgo.ProduceRequestTimeout(5*time.Second), kgo.RequestTimeoutOverhead(5*time.Second), kgo.RecordDeliveryTimeout(0))
		recs := onePerPartition(names, parts, fmt.Appendf(nil, "round %d", round))
		start, fsyncs := time.Now(), disk.syncs.Load()
		done := make(chan error, 1)
		go func() { done <- cl.ProduceSync(context.Background(), recs...).FirstErr() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: %v (after %v)", round, err, time.Since(start))
			}
		case <-time.After(60 * time.Second):
			cl.Close() // ends the retries
			t.Fatalf("round %d: no answer within 60 s (%d fsyncs meanwhile)", round, disk.syncs.Load()-fsyncs)
		}
		t.Logf("round %d: %d partitions answered in %v, %d fsyncs", round, len(recs), time.Since(start), disk.syncs.Load()-fsyncs)
	}
	produceToAll(b.Addr, 1)
	produceToAll(b.Addr, 2)
	addr := b.Addr
	b.Stop()
	b = testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithAddr(addr), cfg)
	produceToAll(b.Addr, 3)
	w := dial(t, b.Addr)
	for _, n := range names {
		for p := range int32(parts) {
			if end := listLatest(t, w, n, p); end != 3 {
				t.Fatalf("%s-%d ends at %d after three rounds, want 3", n, p, end)
			}
		}
	}
}

// TestShutdownClosesPartitionsTogether: a clean shutdown closes the open
// logs several at a time. One after the other, each close's fsyncs in
// turn, a broker with 10,000 partitions took 2 min 42 s to stop.
func TestShutdownClosesPartitionsTogether(t *testing.T) {
	testenv.Slow(t, "closes 200 partitions on a disk of 5 ms fsyncs")
	disk := &slowDisk{delay: 5 * time.Millisecond}
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Log.FS = disk }))
	const topics, parts = 40, 5
	names := createNumberedTopics(t, b.Addr, "stop", topics, parts)
	cl := manualPartitionClient(t, b.Addr)
	if err := cl.ProduceSync(context.Background(), onePerPartition(names, parts, []byte("x"))...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	testenv.Eventually(t, 30*time.Second, "the writes' fsyncs are done", func() bool { return disk.inFlight.Load() == 0 })
	disk.most.Store(0)
	start, fsyncs := time.Now(), disk.syncs.Load()
	b.Stop()
	t.Logf("%d open partitions closed in %v: %d fsyncs, at most %d at once", topics*parts, time.Since(start), disk.syncs.Load()-fsyncs, disk.most.Load())
	if disk.most.Load() < 4 {
		t.Errorf("shutdown ran at most %d fsyncs at once: the logs closed one after the other", disk.most.Load())
	}
}

// TestRestartAfterKillRecoversPartitionsTogether: after an unclean stop
// the broker recovers its partitions several at a time before it serves.
// One after the other, a broker killed with 10,000 partitions took 14 s to
// listen again.
func TestRestartAfterKillRecoversPartitionsTogether(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	const topics, parts = 20, 5
	names := createNumberedTopics(t, b.Addr, "kill", topics, parts)
	cl := manualPartitionClient(t, b.Addr)
	if err := cl.ProduceSync(context.Background(), onePerPartition(names, parts, []byte("x"))...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	b.Stop()
	// As after a kill -9 that came before the logs' next recovery
	// checkpoint: no partition says it shut down cleanly, and each must
	// make what it scanned durable. (A log whose checkpoint is at its end
	// recovers without an fsync.)
	markers, _ := filepath.Glob(filepath.Join(dir, "*", ".clean-shutdown"))
	for _, m := range markers {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(filepath.Dir(m), "recovery-checkpoint")); err != nil {
			t.Fatal(err)
		}
	}
	if len(markers) < topics*parts {
		t.Fatalf("%d clean-shutdown markers, want %d", len(markers), topics*parts)
	}
	disk := &slowDisk{delay: 5 * time.Millisecond}
	start := time.Now()
	b = testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) { c.Log.FS = disk }))
	t.Logf("%d partitions recovered in %v: %d fsyncs, at most %d at once", len(markers), time.Since(start), disk.syncs.Load(), disk.most.Load())
	if disk.most.Load() < 4 {
		t.Errorf("recovery ran at most %d fsyncs at once: the partitions recovered one after the other", disk.most.Load())
	}
	if end := listLatest(t, dial(t, b.Addr), names[0], 0); end != 1 {
		t.Fatalf("%s-0 ends at %d after recovery, want 1", names[0], end)
	}
}

// TestProduceCreatesNewPartitionsTogether: one acks=all produce naming
// many partitions nothing has written yet creates their logs several at a
// time (each creation fsyncs the data directory) before it appends. One
// after the other, on the request's goroutine, 3,000 new partitions held
// their first produce for seconds.
func TestProduceCreatesNewPartitionsTogether(t *testing.T) {
	dir := t.TempDir()
	disk := &slowDisk{delay: 5 * time.Millisecond, root: filepath.Clean(dir)}
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) { c.Log.FS = disk }))
	const topics, parts = 20, 5
	names := createNumberedTopics(t, b.Addr, "new", topics, parts)
	if n := b.OpenPartitions(); n != 0 {
		t.Fatalf("%d partitions open before the first produce, want 0", n)
	}
	cl := manualPartitionClient(t, b.Addr)
	if err := cl.ProduceSync(context.Background(), onePerPartition(names, parts, []byte("x"))...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if n := b.OpenPartitions(); n != topics*parts {
		t.Fatalf("%d partitions open after the produce, want %d", n, topics*parts)
	}
	t.Logf("%d new partitions: at most %d created at once", topics*parts, disk.rootMost.Load())
	if disk.rootMost.Load() < 4 {
		t.Errorf("the produce created at most %d partitions at once: one after the other", disk.rootMost.Load())
	}
	w := dial(t, b.Addr)
	for _, n := range names {
		for p := range int32(parts) {
			if end := listLatest(t, w, n, p); end != 1 {
				t.Fatalf("%s-%d ends at %d, want 1", n, p, end)
			}
		}
	}
}

// slowDisk is the operating system's file system with every fsync taking
// delay longer: a disk slower than this machine's, on which the fsyncs
// each partition open and close does show.
type slowDisk struct {
	log.OSFS
	delay time.Duration
	syncs atomic.Int64
	// inFlight and most count the fsyncs under way at once.
	inFlight, most atomic.Int64
	// root is the data directory; rootInFlight and rootMost count its own
	// fsyncs under way at once: one for each new partition's directory.
	root                   string
	rootInFlight, rootMost atomic.Int64
}

// sync is one fsync of the slow disk.
func (d *slowDisk) sync(real func() error) error {
	d.syncs.Add(1)
	n := d.inFlight.Add(1)
	for m := d.most.Load(); n > m && !d.most.CompareAndSwap(m, n); m = d.most.Load() {
	}
	time.Sleep(d.delay)
	d.inFlight.Add(-1)
	return real()
}

func (d *slowDisk) OpenFile(name string, flag int, perm os.FileMode) (log.File, error) {
	f, err := d.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return slowFile{f, d}, nil
}

func (d *slowDisk) SyncDir(dir string) error {
	if d.root != "" && filepath.Clean(dir) == d.root {
		n := d.rootInFlight.Add(1)
		for m := d.rootMost.Load(); n > m && !d.rootMost.CompareAndSwap(m, n); m = d.rootMost.Load() {
		}
		defer d.rootInFlight.Add(-1)
	}
	return d.sync(func() error { return d.OSFS.SyncDir(dir) })
}

type slowFile struct {
	log.File
	d *slowDisk
}

func (f slowFile) Sync() error { return f.d.sync(f.File.Sync) }

// TestIdleBrokerWithManyOpenPartitions: a broker with 1,000 open
// partitions and no client uses next to no CPU: no partition keeps a timer,
// goroutine or sweep busy while nothing happens. Measured as the process's
// own CPU time (getrusage, so other processes on the machine do not count)
// over a window, as a share of that window.
func TestIdleBrokerWithManyOpenPartitions(t *testing.T) {
	testenv.Slow(t, "opens 1,000 partitions and measures idle CPU over a window")
	b := testenv.StartBroker(t)
	const topics, parts = 200, 5
	names := createNumberedTopics(t, b.Addr, "idle", topics, parts)
	cl := manualPartitionClient(t, b.Addr)
	if err := cl.ProduceSync(context.Background(), onePerPartition(names, parts, []byte("x"))...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if n := b.OpenPartitions(); n < topics*parts {
		t.Fatalf("%d partitions open, want %d", n, topics*parts)
	}
	time.Sleep(2 * time.Second) // the flushes and closes behind the answers
	const window = 5 * time.Second
	before, start := cpuTime(), time.Now()
	time.Sleep(window)
	used, elapsed := cpuTime()-before, time.Since(start)
	share := used.Seconds() / elapsed.Seconds()
	t.Logf("idle with %d open partitions: %v of CPU in %v (%.2f%% of a core)", topics*parts, used, elapsed.Round(time.Millisecond), 100*share)
	if share > 0.05 {
		t.Errorf("an idle broker with %d open partitions used %.1f%% of a core", topics*parts, 100*share)
	}
}

// TestCreateTopicsBatchesRegistryWrites: one CreateTopics request naming
// 400 topics costs a few writes of the standalone topic registry, not one
// per topic. One at a time, each topic waited for its own fsynced rewrite
// of the whole registry, and 2,000 topics took 17.7 s against Kafka's 3.
func TestCreateTopicsBatchesRegistryWrites(t *testing.T) {
	b := testenv.StartBroker(t)
	const topics = 400
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("batch-%03d", i)
	}
	var writes atomic.Int64
	stop := make(chan struct{})
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for {
			ch := b.MetadataChanged()
			select {
			case <-ch:
				writes.Add(1)
			case <-stop:
				return
			}
		}
	}()
	resp, err := kadm.NewClient(newClient(t, b.Addr)).CreateTopics(context.Background(), 1, 1, nil, names...)
	close(stop)
	<-counted
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d topics created with %d registry writes", topics, writes.Load())
	if writes.Load() > topics/8 {
		t.Errorf("%d topics took %d registry writes: not batched", topics, writes.Load())
	}
}
