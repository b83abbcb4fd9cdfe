package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register("produce", "send each line of stdin as one record to a topic (with --schema: one JSON event per line, encoded as Avro, Protobuf or JSON Schema and counted for the audit)", runProduce)
}

func runProduce(ctx context.Context, args []string) error {
	fs := newFlags("produce")
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated broker addresses")
	topic := fs.String("topic", "", "topic to produce to (required)")
	keySep := fs.String("key-separator", "", "split each line at the first occurrence into key and value")
	acks := fs.String("acks", "all", "acknowledgement: all (after fsync), 1 (after append) or 0 (fire and forget)")
	shutdown := fs.Duration("shutdown-timeout", 10*time.Second, "on SIGTERM (or at the end of stdin, for the audit counts), wait at most this long for acknowledgements and for the audit counts to be published; counts left unpublished are named")
	var af avroFlags
	af.register(fs)
	af.sec.register(fs, true)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *topic == "" {
		return errors.New("--topic is required")
	}
	// Like kcat: a topic that does not exist yet is created by the broker
	// when it allows auto-creation (the standalone default).
	opts := []kgo.Opt{kgo.SeedBrokers(splitList(*brokers)...), kgo.DefaultProduceTopic(*topic), kgo.AllowAutoTopicCreation()}
	switch *acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return fmt.Errorf("--acks %q: use all, 1 or 0", *acks)
	}
	cl, err := af.sec.newKafkaClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if *shutdown <= 0 {
		return errors.New("--shutdown-timeout must be positive")
	}
	if af.wal != "" && af.schema == "" {
		return errors.New("--audit-wal needs --schema: only audited events are counted")
	}
	if af.schema != "" {
		return produceEvents(ctx, cl, *topic, splitList(*brokers), af, *shutdown)
	}

	var (
		mu     sync.Mutex
		failed error
		sent   int
		in     = readLines(os.Stdin)
	)
	for {
		b, ok := in.next(ctx)
		if !ok {
			break
		}
		line := string(b)
		rec := &kgo.Record{Value: []byte(line)}
		if *keySep != "" {
			if k, v, ok := strings.Cut(line, *keySep); ok {
				rec.Key, rec.Value = []byte(k), []byte(v)
			}
		}
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && failed == nil {
				failed = fmt.Errorf("record %q: %w", r.Value, err)
			}
			if err == nil {
				sent++
			}
		})
	}
	if ctx.Err() == nil && in.err != nil {
		return fmt.Errorf("reading stdin: %w", in.err)
	}
	if err := flushBounded(ctx, cl.Flush, *shutdown); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(os.Stderr, "produced %d records to %s\n", sent, *topic)
	return failed
}

// flushBounded waits for every record produced to be acknowledged: for as
// long as it takes while ctx runs, and at most timeout once it is done
// (SIGTERM), so that what was sent is still acknowledged, but the process
// exits in time whatever the brokers do.
func flushBounded(ctx context.Context, flush func(context.Context) error, timeout time.Duration) error {
	err := flush(ctx)
	if ctx.Err() == nil {
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := flush(sctx); err != nil {
		return fmt.Errorf("stopped: records not acknowledged within --shutdown-timeout %v: %w", timeout, err)
	}
	return nil
}
