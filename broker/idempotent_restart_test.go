package broker_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestIdempotentRetryAfterRestart: a kgo idempotent producer writes ten
// one-record batches, each rolling a segment; after the broker restarts, a
// batch re-sent with the producer id, epoch and sequence of the eighth
// (as kgo would after losing the answer) is answered with the original
// offset and not written again, and the producer's next sequence appends.
func TestIdempotentRetryAfterRestart(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	segment := "1024" // one ~650-byte batch per segment
	createTopic(t, b.Addr, "dedupe", 1, map[string]*string{"segment.bytes": &segment})
	cl := newClient(t, b.Addr, kgo.DefaultProduceTopic("dedupe"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := range 10 {
		r := &kgo.Record{Value: []byte(strings.Repeat(string(rune('a'+i)), 600))}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cl.Close()
	got := consumeAll(t, b.Addr, "dedupe", 10)[0]
	pid, epoch := got[7].ProducerID, got[7].ProducerEpoch
	if pid < 0 || got[7].Offset != 7 {
		t.Fatalf("record 7: offset %d, producer id %d: want offset 7 from an idempotent producer", got[7].Offset, pid)
	}
	b.Stop()
	if segs, _ := filepath.Glob(filepath.Join(dir, "dedupe-0", "*.log")); len(segs) < 10 {
		t.Fatalf("%d segments, want one per batch: the retried batch must sit in an older segment", len(segs))
	}

	b2 := testenv.StartBroker(t, testenv.WithDataDir(dir))
	w := dial(t, b2.Addr)
	// Sequences are per partition and count records: record i had sequence i.
	res := produceResult(w.roundTrip(produceRequest(9, -1, "dedupe", 0, makeBatch(pid, epoch, 7, "retry of record 7"))))
	wantCode(t, "retry after restart", res.ErrorCode, nil)
	if res.BaseOffset != 7 {
		t.Fatalf("retry after restart answered with offset %d, want the original 7", res.BaseOffset)
	}
	if latest := listOffset(t, w, "dedupe", 0, -1); latest != 10 {
		t.Fatalf("log end %d after the retry, want 10: the retry was written again", latest)
	}
	res = produceResult(w.roundTrip(produceRequest(9, -1, "dedupe", 0, makeBatch(pid, epoch, 10, "next"))))
	wantCode(t, "next sequence", res.ErrorCode, nil)
	if res.BaseOffset != 10 {
		t.Fatalf("next sequence appended at %d, want 10", res.BaseOffset)
	}
}
