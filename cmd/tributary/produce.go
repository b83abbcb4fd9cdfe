package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register("produce", "send each line of stdin as one record to a topic (with --schema: one JSON event per line, Avro-encoded and counted for the audit)", runProduce)
}

func runProduce(ctx context.Context, args []string) error {
	fs := newFlags("produce")
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated broker addresses")
	topic := fs.String("topic", "", "topic to produce to (required)")
	keySep := fs.String("key-separator", "", "split each line at the first occurrence into key and value")
	acks := fs.String("acks", "all", "acknowledgement: all (after fsync), 1 (after append) or 0 (fire and forget)")
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
	if af.schema != "" {
		return produceAvro(ctx, cl, *topic, splitList(*brokers), af)
	}

	var (
		mu      sync.Mutex
		failed  error
		sent    int
		scanner = bufio.NewScanner(os.Stdin)
	)
	scanner.Buffer(make([]byte, 64<<10), 16<<20)
	for scanner.Scan() {
		line := scanner.Text()
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
	if err := scanner.Err(); err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(os.Stderr, "produced %d records to %s\n", sent, *topic)
	return failed
}
