package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A compacted topic end to end: created with cleanup.policy=compact, it
// refuses keyless records with INVALID_RECORD; the broker's cleaner
// compacts it in the background; a kgo consumer reads it from the start
// across the gaps compaction left and gets the last value of every key at
// its original offset, and nothing superseded below the active segment.
func TestCompactedTopicCleanedAndConsumed(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.Log.Cleaner.Backoff = 20 * time.Millisecond
	}))
	createTopic(t, b.Addr, "state", 1, map[string]*string{
		"cleanup.policy":            kmsg.StringPtr("compact"),
		"segment.bytes":             kmsg.StringPtr("1024"),
		"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"),
	})
	ctx := context.Background()
	cl := newClient(t, b.Addr, kgo.DefaultProduceTopic("state"))

	err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v, want INVALID_RECORD", err)
	}

	const keys, rounds = 10, 20
	last := map[string]int64{}
	for r := range rounds {
		for k := range keys {
			rec := &kgo.Record{Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "round %d of key %d, padded to look like state ..........", r, k)}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
			last[string(rec.Key)] = rec.Offset
		}
	}
	// The cleaner records where it got to once it has cleaned.
	checkpoint := filepath.Join(dir, "state-0", "cleaner-checkpoint")
	testenv.Eventually(t, 60*time.Second, "the broker's cleaner cleans the compacted topic", func() bool {
		_, err := os.Stat(checkpoint)
		return err == nil
	})

	cons := newClient(t, b.Addr, kgo.ConsumeTopics("state"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) == 0 || got[len(got)-1].Offset < keys*rounds-1 {
		fs := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("consumed up to %d records before timeout", len(got))
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		got = append(got, fs.Records()...)
	}
	if len(got) >= keys*rounds {
		t.Fatalf("read %d records: nothing was compacted", len(got))
	}
	seen := map[string]bool{}
	prev := int64(-1)
	gaps := 0
	for _, r := range got {
		if r.Offset <= prev {
			t.Fatalf("offset %d after %d", r.Offset, prev)
		}
		if r.Offset > prev+1 {
			gaps++
		}
		prev = r.Offset
		if r.Offset == last[string(r.Key)] {
			seen[string(r.Key)] = true
		}
	}
	if len(seen) != keys {
		t.Fatalf("last values of %d keys read, want all %d", len(seen), keys)
	}
	if gaps == 0 {
		t.Fatal("no gap in the offsets read: compaction left none?")
	}
}
