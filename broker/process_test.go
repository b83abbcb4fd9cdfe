package broker_test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

func startStandalone(t *testing.T, dataDir, addr string) *testenv.Process {
	t.Helper()
	// No schema registry: these tests are about the broker.
	p := testenv.StartProcess(t, "standalone", "--data-dir", dataDir, "--listen", addr, "--registry-listen=", "--flush-interval", "20ms")
	testenv.WaitListening(t, p, addr, 30*time.Second)
	return p
}

// TestKillDuringProduce kills the broker process with SIGKILL in the middle
// of an acks=all produce stream, restarts it on the same data, and checks
// that every acknowledged record is there, in order, exactly once.
func TestKillDuringProduce(t *testing.T) {
	dataDir, addr := t.TempDir(), testenv.FreeAddr(t)
	proc := startStandalone(t, dataDir, addr)
	createTopic(t, addr, "orders", 3, nil)

	prod := newClient(t, addr, kgo.DefaultProduceTopic("orders"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(5*time.Second))
	var mu sync.Mutex
	acked := map[int32][]int{}
	total := 0
	killed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			prod.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
				if err != nil {
					return
				}
				n, _ := strconv.Atoi(string(r.Value))
				mu.Lock()
				acked[r.Partition] = append(acked[r.Partition], n)
				total++
				if total == 30_000 {
					close(killed)
				}
				mu.Unlock()
			})
		}
	}()
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatal("30k records not acknowledged within a minute")
	}
	proc.Kill()
	cancel()
	prod.Close()
	mu.Lock()
	want := map[int32][]int{}
	for p, v := range acked {
		want[p] = append([]int(nil), v...)
	}
	mu.Unlock()

	startStandalone(t, dataDir, addr)
	cons := newClient(t, addr, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ends := endOffsets(t, addr, "orders")
	got := map[int32][]int{}
	testenv.Eventuallyf(t, 60*time.Second, func() (bool, string) {
		pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cons.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			n, _ := strconv.Atoi(string(r.Value))
			got[r.Partition] = append(got[r.Partition], n)
		})
		return reached(got, ends), fmt.Sprintf("consumed %v records, log ends at %v", lens(got), ends)
	})
	for p, values := range got {
		seen := map[int]bool{}
		for i, v := range values {
			if seen[v] {
				t.Fatalf("partition %d: record %d appears twice", p, v)
			}
			seen[v] = true
			if i > 0 && v <= values[i-1] {
				t.Fatalf("partition %d: record %d after %d: order lost", p, v, values[i-1])
			}
		}
		for _, v := range want[p] {
			if !seen[v] {
				t.Fatalf("partition %d: acknowledged record %d is missing after the crash", p, v)
			}
		}
	}
	t.Logf("acknowledged before the kill: %v; present after restart: %v", lens(want), lens(got))
}

func endOffsets(t *testing.T, addr, topic string) map[int32]int64 {
	t.Helper()
	w := dial(t, addr)
	ends := map[int32]int64{}
	for p := int32(0); p < 3; p++ {
		ends[p] = listLatest(t, w, topic, p)
	}
	return ends
}

func reached(got map[int32][]int, ends map[int32]int64) bool {
	for p, end := range ends {
		if int64(len(got[p])) < end {
			return false
		}
	}
	return true
}

func lens(m map[int32][]int) map[int32]int {
	out := map[int32]int{}
	for p, v := range m {
		out[p] = len(v)
	}
	return out
}

// TestGracefulShutdown: SIGTERM lets the process finish, exit 0, and the
// data is all there after a restart.
func TestGracefulShutdown(t *testing.T) {
	dataDir, addr := t.TempDir(), testenv.FreeAddr(t)
	proc := startStandalone(t, dataDir, addr)
	prod := newClient(t, addr, kgo.DefaultProduceTopic("clean"), kgo.AllowAutoTopicCreation())
	var recs []*kgo.Record
	for i := range 1000 {
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	if err := proc.Stop(30 * time.Second); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	if out := proc.Output.String(); !strings.Contains(out, "broker stopped") {
		t.Fatalf("no shutdown line in the log:\n%s", out)
	}
	startStandalone(t, dataDir, addr)
	got := consumeAll(t, addr, "clean", 1000)[0]
	for i, r := range got {
		if string(r.Value) != strconv.Itoa(i) {
			t.Fatalf("offset %d holds %q after restart", i, r.Value)
		}
	}
}

// TestKcat drives the broker with Debian's kcat (librdkafka): produce with
// idempotence and compression, then consume from the beginning.
func TestKcat(t *testing.T) {
	testenv.Needs(t, testenv.Kcat)
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is missing: run scripts/install-deps.sh (.ci/run does)")
	}
	b := testenv.StartBroker(t)
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := "kcat-" + codec
			var lines []string
			for i := range 500 {
				lines = append(lines, fmt.Sprintf("%s line %d", codec, i))
			}
			in := strings.Join(lines, "\n") + "\n"
			produce := exec.Command(kcat, "-b", b.Addr, "-t", topic, "-P",
				"-X", "enable.idempotence=true", "-X", "compression.codec="+codec)
			produce.Stdin = strings.NewReader(in)
			if out, err := produce.CombinedOutput(); err != nil {
				t.Fatalf("kcat -P: %v\n%s", err, out)
			}
			consume := exec.Command(kcat, "-b", b.Addr, "-t", topic, "-C", "-o", "beginning", "-e", "-q")
			out, err := consume.Output()
			if err != nil {
				t.Fatalf("kcat -C: %v\n%s", err, out)
			}
			if string(out) != in {
				t.Fatalf("kcat read back %d bytes, want %d:\n%.300s", len(out), len(in), out)
			}
		})
	}
}
