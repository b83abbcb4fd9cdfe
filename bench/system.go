package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// system is one broker the bench can measure: how to start it and how to
// talk to it.
type system struct {
	name string
	// notes: durability as configured, and what batch and acks mean here.
	notes string
	// nodes is how many brokers it runs (0 reads as 1); a system of
	// several runs the replicated test, a system of one the others.
	nodes int
	// capacityOnly: measured by the capacity test alone.
	capacityOnly bool
	start        func(ctx context.Context, cfg Config, dir string) (*server, error)
	connect      func(ctx context.Context, addr string) (driver, error)
}

var systems = map[string]*system{}

func register(s *system) { systems[s.name] = s }

// nodesOf is the number of brokers of the named system, 1 if unknown.
func nodesOf(name string) int {
	if s, ok := systems[name]; ok && s.nodes > 1 {
		return s.nodes
	}
	return 1
}

// applies reports whether test is measured on s: replication needs
// several brokers, and the paper's single-broker tests are measured once,
// on the one-node systems. Memory applies to every system.
func (s *system) applies(test string) bool {
	switch test {
	case TestMemory:
		return true
	case TestReplicated:
		return s.nodes > 1
	default:
		return s.nodes <= 1
	}
}

// server is a running system: one broker process, or the processes of a
// cluster.
type server struct {
	addr    string // host:port, or host:port,host:port,... of a cluster
	pid     int    // the (first) broker process itself, for profiles
	pids    []int  // every process of the system, for VmHWM
	dataDir string // what its storage is measured on
	stop    func() error
}

// driver is a client of one system. Each method runs one test's client
// side; the runner times it.
type driver interface {
	// Produce sends up to n messages to dest, batch at a time, waiting for
	// the broker's acknowledgement of every batch if acked, and stops early
	// at deadline. It returns once the broker holds every message it sent
	// (for fire-and-forget: polls the broker until it does), with how many
	// it sent and how many the broker holds.
	Produce(ctx context.Context, dest string, n, batch int, acked bool, deadline time.Time) (sent, stored int, err error)
	// Consume reads n messages of dest from its start, prefetching about
	// 200 KB or 1000 messages per request, and stops early at deadline.
	Consume(ctx context.Context, dest string, n int, deadline time.Time) (got int, err error)
	// Latency produces one acknowledged message per tick of every to dest
	// until stop while a consumer reads dest, and returns the delay of each
	// message from its send to its receipt.
	Latency(ctx context.Context, dest string, every time.Duration, stop time.Time) ([]time.Duration, error)
	Close()
}

// payload returns a MessageSize message; its first 8 bytes are the send
// time in Unix nanoseconds, for the latency test.
func payload(rng *rand.Rand) []byte {
	b := make([]byte, MessageSize)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func stamp(b []byte) []byte {
	binary.BigEndian.PutUint64(b, uint64(time.Now().UnixNano()))
	return b
}

func sentAt(b []byte) (time.Time, bool) {
	if len(b) < 8 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))), true
}

// runner runs the tests against one started system.
type runner struct {
	cfg    Config
	log    *slog.Logger
	srv    *server
	drv    driver
	system string
}

// warmUp runs a little of every test untimed, so that JIT compilation,
// first connections and first files are not charged to the first row.
func (r *runner) warmUp(ctx context.Context) {
	const dest = "bench-warmup"
	stored := 0
	for _, w := range []struct{ n, batch int }{{2000, 1}, {50000, 50}} {
		_, s, err := r.drv.Produce(ctx, dest, min(w.n, r.cfg.Messages), w.batch, true, time.Now().Add(5*time.Second))
		if err != nil {
			r.log.Warn("warm-up produce", "err", err)
			return
		}
		stored += s
	}
	if _, err := r.drv.Consume(ctx, dest, stored, time.Now().Add(5*time.Second)); err != nil {
		r.log.Warn("warm-up consume", "err", err)
	}
}

func (r *runner) produce(ctx context.Context, batch, acks int) Row {
	row := Row{System: r.system, Test: TestProduce, Batch: batch, Acks: acks}
	dest := topicName(batch, acks)
	before, errBefore := diskUsage(r.srv.dataDir)
	stopProfile := r.profile(fmt.Sprintf("produce-b%d-a%d", batch, acks))
	start := time.Now()
	sent, stored, err := r.drv.Produce(ctx, dest, r.cfg.Messages, batch, acks == 1, start.Add(r.cfg.RowTime))
	elapsed := time.Since(start)
	stopProfile()
	if err != nil {
		row.Status = "failed: " + oneLine(err.Error())
		r.log.Warn("produce", "batch", batch, "acks", acks, "err", err)
		return row
	}
	row.produced(sent, stored, elapsed)
	// Brokers that write behind (RabbitMQ's message store, a flush timer)
	// get a moment to put what they hold on disk before it is measured.
	time.Sleep(time.Second)
	after, errAfter := diskUsage(r.srv.dataDir)
	if errBefore == nil && errAfter == nil && stored > 0 {
		o := float64(after-before)/float64(stored) - MessageSize
		row.OverheadBytes = &o
	}
	r.log.Info("produce", "batch", batch, "acks", acks, "messages", stored, "msgs_per_sec", int(row.MsgsPerSec))
	return row
}

func (r *runner) consume(ctx context.Context, dest string, n int) Row {
	row := Row{System: r.system, Test: TestConsume, Batch: 1000}
	if n == 0 {
		row.Status = "failed: nothing was produced to read back"
		return row
	}
	stopProfile := r.profile("consume")
	start := time.Now()
	got, err := r.drv.Consume(ctx, dest, n, start.Add(r.cfg.RowTime))
	elapsed := time.Since(start)
	stopProfile()
	if err != nil {
		row.Status = "failed: " + oneLine(err.Error())
		r.log.Warn("consume", "err", err)
		return row
	}
	row.Messages = got
	row.Seconds = elapsed.Seconds()
	row.MsgsPerSec = float64(got) / elapsed.Seconds()
	row.MBPerSec = row.MsgsPerSec * MessageSize / 1e6
	row.Status = "ok"
	r.log.Info("consume", "messages", got, "msgs_per_sec", int(row.MsgsPerSec))
	return row
}

func (r *runner) latency(ctx context.Context) Row {
	row := Row{System: r.system, Test: TestLatency, Batch: 1, Acks: 1}
	every := time.Second / time.Duration(r.cfg.LatencyRate)
	stopProfile := r.profile("latency")
	start := time.Now()
	lat, err := r.drv.Latency(ctx, "bench-latency", every, start.Add(r.cfg.LatencyTime))
	elapsed := time.Since(start)
	stopProfile()
	if err != nil {
		row.Status = "failed: " + oneLine(err.Error())
		r.log.Warn("latency", "err", err)
		return row
	}
	if len(lat) == 0 {
		row.Status = "failed: no message came back"
		return row
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	row.Messages = len(lat)
	row.Seconds = elapsed.Seconds()
	row.MsgsPerSec = float64(len(lat)) / elapsed.Seconds()
	row.MBPerSec = row.MsgsPerSec * MessageSize / 1e6
	row.P50Ms, row.P99Ms = pct(0.50), pct(0.99)
	row.Status = "ok"
	r.log.Info("latency", "messages", len(lat), "p50_ms", row.P50Ms, "p99_ms", row.P99Ms)
	return row
}

// memory is the peak RSS of the system: of its one broker, or the sum over
// the processes of a cluster (each peaks at its own moment, so the sum is
// an upper bound of what the cluster held at once).
func (r *runner) memory() Row {
	row := Row{System: r.system, Test: TestMemory}
	var (
		total int64
		each  []int64
	)
	for _, pid := range r.srv.pids {
		kb, err := peakRSSKiB(pid)
		if err != nil {
			row.Status = "failed: " + oneLine(err.Error())
			return row
		}
		total += kb
		each = append(each, kb/1024)
	}
	row.PeakRSSMB = float64(total) / 1024
	r.log.Info("memory", "peak_rss_mb", int(row.PeakRSSMB), "per_process_mb", each)
	row.Status = "ok"
	return row
}

// profile records the Tributary broker with perf while one row runs, when
// asked to; the returned function ends the recording.
func (r *runner) profile(name string) func() {
	if r.cfg.ProfileDir == "" || r.system != "tributary" {
		return func() {}
	}
	out := filepath.Join(r.cfg.ProfileDir, "tributary-"+name+".perf.data")
	cmd := exec.Command("perf", "record", "-q", "-F", "999", "-g", "-p", fmt.Sprint(r.srv.pid), "-o", out)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		r.log.Warn("perf record", "err", err)
		return func() {}
	}
	time.Sleep(200 * time.Millisecond) // perf attaches before the row starts
	return func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		r.log.Info("profile written", "file", out)
	}
}
