package system_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestKillDuringCleaning kills the broker process with SIGKILL while its
// cleaner is swapping cleaned segments in (a .cleaned file or the swap
// marker is on disk), restarts it on the same data, and checks that the
// compacted topic reads back consistently: every record read is one that
// was produced at that offset, offsets only grow, and for every key the
// last acknowledged record, or a later one of the same key, is there.
func TestKillDuringCleaning(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	dataDir, addr := t.TempDir(), testenv.FreeAddr(t)
	args := []string{"standalone", "--data-dir", dataDir, "--listen", addr, "--registry-listen=",
		"--log-cleaner-backoff", "5ms", "--log-cleaner-dedupe-buffer-size", "48000"}
	proc := testenv.StartProcess(t, args...)
	testenv.WaitListening(t, proc, addr, 30*time.Second)
	brokertest.CreateTopic(t, addr, "state", 1, map[string]*string{
		"cleanup.policy":            kmsg.StringPtr("compact"),
		"segment.bytes":             kmsg.StringPtr("4096"),
		"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"),
	})
	prod := brokertest.NewClient(t, addr, kgo.DefaultProduceTopic("state"), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(5*time.Second))

	type rec struct{ key, value string }
	var mu sync.Mutex
	acked := map[int64]rec{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%3000), Value: fmt.Appendf(nil, "v%d", i)}
			prod.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acked[r.Offset] = rec{string(r.Key), string(r.Value)}
					mu.Unlock()
				}
			})
		}
	}()
	// Best: kill between the swap's commit and its end (the marker is on
	// disk, the next start must finish the swap); the window is a few
	// fsyncs long, so after a while a kill while .cleaned files are being
	// written (the next start must roll back) will do.
	part := filepath.Join(dataDir, "state-0")
	start := time.Now()
	for {
		marker, cleaning := swapping(part)
		if marker || cleaning && time.Since(start) > 20*time.Second {
			break
		}
		if time.Since(start) > 90*time.Second {
			t.Fatal("never saw the cleaner swapping segments within 90s")
		}
	}
	proc.Kill()
	cancel()
	prod.Close()
	// The producer's callbacks run on its goroutines: read what they
	// recorded under the lock they wrote it with.
	mu.Lock()
	acknowledged := maps.Clone(acked)
	mu.Unlock()

	proc = testenv.StartProcess(t, args...)
	testenv.WaitListening(t, proc, addr, 30*time.Second)
	end := endOffsets(t, addr, "state")[0]
	cons := brokertest.NewClient(t, addr, kgo.ConsumeTopics("state"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	read := map[string][]int64{}
	prev := int64(-1)
	for prev < end-1 {
		fs := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("read up to offset %d of %d before timeout", prev, end)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		for _, r := range fs.Records() {
			if r.Offset <= prev {
				t.Fatalf("offset %d after %d", r.Offset, prev)
			}
			prev = r.Offset
			if want, ok := acknowledged[r.Offset]; ok && (want.key != string(r.Key) || want.value != string(r.Value)) {
				t.Fatalf("offset %d reads %s=%s, was acknowledged as %s=%s", r.Offset, r.Key, r.Value, want.key, want.value)
			}
			read[string(r.Key)] = append(read[string(r.Key)], r.Offset)
		}
	}
	lastAcked := map[string]int64{}
	for off, r := range acknowledged {
		lastAcked[r.key] = max(lastAcked[r.key], off)
	}
	for key, off := range lastAcked {
		offs := read[key]
		if len(offs) == 0 || offs[len(offs)-1] < off {
			t.Fatalf("key %s: last acknowledged record at %d is gone and nothing newer replaced it (read %v)", key, off, offs)
		}
	}
	t.Logf("%d records acknowledged, %d offsets, %d keys read back; the restart finished a committed swap: %v",
		len(acknowledged), end, len(read), strings.Contains(proc.Output.String(), "finished swapping in cleaned segments"))
}

// swapping reports whether a cleaning of the partition in dir is swapping
// in its segments (marker) or writing them (cleaning) right now.
func swapping(dir string) (marker, cleaning bool) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		marker = marker || e.Name() == "cleaning-swap"
		cleaning = cleaning || strings.HasSuffix(e.Name(), ".cleaned")
	}
	return marker, cleaning
}
