package system_test

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// limitedBroker is a `tributary standalone` process run under prlimit
// with the given limits (e.g. "--nofile=512:512": soft and hard, so the
// broker cannot raise it).
type limitedBroker struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func startLimitedBroker(t *testing.T, limit, dataDir, addr string, extra ...string) *limitedBroker {
	t.Helper()
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) not installed")
	}
	args := append([]string{limit, "--", testenv.Binary(t),
		"standalone", "--data-dir", dataDir, "--listen", addr, "--registry-listen=", "--flush-interval", "20ms"}, extra...)
	cmd := exec.Command("prlimit", args...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &limitedBroker{cmd: cmd, out: out, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("broker output:\n%s", out.String())
		}
	})
	testenv.Eventually(t, 30*time.Second, "the broker listens on "+addr, func() bool {
		select {
		case <-p.done:
			t.Fatalf("broker exited before listening:\n%s", out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return p
}

func (p *limitedBroker) signal(sig syscall.Signal) {
	p.cmd.Process.Signal(sig)
	<-p.done
}

// produceEach writes one record to every partition of topic (acks=all),
// a slice of the partitions per request as many producers would, and fails
// the test on any error.
func produceEach(t *testing.T, addr, topic string, partitions, chunk, round int) {
	t.Helper()
	cl := brokertest.NewClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(90*time.Second))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for from := 0; from < partitions; from += chunk {
		var recs []*kgo.Record
		for p := from; p < min(from+chunk, partitions); p++ {
			recs = append(recs, &kgo.Record{Partition: int32(p), Value: []byte(strconv.Itoa(round))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: producing to partitions %d-%d: %v", round, from, from+len(recs)-1, err)
		}
	}
}

// TestManyPartitionsUnderLowFileLimit: a broker whose descriptor limit is
// far below what its partitions would hold open at once (three per
// partition: 1000 partitions, 512 descriptors) still takes writes to all
// of them, recovers them all after
// SIGKILL, restarts cleanly, and serves every record back.
func TestManyPartitionsUnderLowFileLimit(t *testing.T) {
	testenv.Needs(t, testenv.Tributary, testenv.Program("prlimit"))
	const partitions, nofile, chunk = 1000, "--nofile=512:512", 50
	dataDir, addr := t.TempDir(), testenv.FreeAddr(t)
	b := startLimitedBroker(t, nofile, dataDir, addr)
	brokertest.CreateTopic(t, addr, "wide", partitions, nil)
	produceEach(t, addr, "wide", partitions, chunk, 0)
	b.signal(syscall.SIGKILL)

	// Every partition is unclean now: all are recovered at start.
	b = startLimitedBroker(t, nofile, dataDir, addr)
	produceEach(t, addr, "wide", partitions, chunk, 1)
	b.signal(syscall.SIGTERM)

	startLimitedBroker(t, nofile, dataDir, addr)
	produceEach(t, addr, "wide", partitions, chunk, 2)
	// Consumers each read a slice of the partitions, as a group's members
	// would: one fetch naming all of them would make the broker open and
	// close every log on each fetch, since only ~85 fit in its descriptors.
	got := make([]string, partitions)
	for from := 0; from < partitions; from += chunk {
		offsets := map[int32]kgo.Offset{}
		for p := from; p < from+chunk; p++ {
			offsets[int32(p)] = kgo.NewOffset().AtStart()
		}
		cons := brokertest.NewClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"wide": offsets}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for n := 0; n < 3*chunk; {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("partitions %d-%d: consumed %d of %d records", from, from+chunk-1, n, 3*chunk)
			}
			fs.EachRecord(func(r *kgo.Record) {
				got[r.Partition] += string(r.Value)
				n++
			})
		}
		cancel()
		cons.Close()
	}
	for p, s := range got {
		if s != "012" {
			t.Fatalf("partition %d holds %q, want \"012\"", p, s)
		}
	}
}
