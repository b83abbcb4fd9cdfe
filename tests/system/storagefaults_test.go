package system_test

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestFullDiskIsLogged runs the broker with a file size limit (RLIMIT_FSIZE:
// writes past it fail with EFBIG, as they fail with ENOSPC on a full disk):
// producers get KAFKA_STORAGE_ERROR, the operator gets one log line per
// partition however many writes fail, and one more when a write fits again.
func TestFullDiskIsLogged(t *testing.T) {
	testenv.Needs(t, testenv.Tributary, testenv.Program("prlimit"))
	dataDir, addr := t.TempDir(), testenv.FreeAddr(t)
	b := startLimitedBroker(t, "--fsize=1000000", dataDir, addr)
	brokertest.CreateTopic(t, addr, "full", 1, nil)
	cl := brokertest.NewClient(t, addr, kgo.DefaultProduceTopic("full"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordRetries(1))
	ctx := context.Background()
	big := bytes.Repeat([]byte("x"), 64<<10)
	failures := 0
	for i := 0; i < 40 && failures < 3; i++ {
		err := cl.ProduceSync(ctx, &kgo.Record{Value: big}).FirstErr()
		switch {
		case err == nil:
		case errors.Is(err, kerr.KafkaStorageError):
			failures++
		default:
			t.Fatalf("record %d: %v, want success or KAFKA_STORAGE_ERROR", i, err)
		}
	}
	if failures < 3 {
		t.Fatalf("40 records of 64 KiB under a 1 MB file size limit: %d refused, want 3", failures)
	}
	// A record that fits in what is left of the limit is written.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("small")}).FirstErr(); err != nil {
		t.Fatalf("small record after the failures: %v", err)
	}
	full := regexp.MustCompile(`level=ERROR msg="partition cannot write: file size limit reached" topic=full partition=0 dir=\S+ free_bytes=\d+ err=`)
	again := regexp.MustCompile(`level=INFO msg="partition writes again" topic=full partition=0`)
	testenv.Eventually(t, 10*time.Second, "the recovery logged", func() bool { return again.MatchString(b.out.String()) })
	out := b.out.String()
	if n := len(full.FindAllString(out, -1)); n != 1 {
		t.Fatalf("%d log lines for the failing partition, want 1:\n%s", n, out)
	}
	if n := len(again.FindAllString(out, -1)); n != 1 {
		t.Fatalf("%d log lines for its recovery, want 1:\n%s", n, out)
	}
}
