package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
)

// avroFlags turn `tributary produce` into an audited event producer.
type avroFlags struct {
	schema, registry, service, server, auditTopic string
	headerField, wal, schemaTypeName, message     string
	references                                    multiFlag
	window, flushInterval                         time.Duration
	sec                                           clientFlags
}

func (f *avroFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.schema, "schema", "", "schema `FILE` (Avro .avsc, Protobuf .proto, JSON Schema with --schema-type JSON): read one JSON event per line, send it in the Confluent envelope and count it for the audit")
	fs.StringVar(&f.schemaTypeName, "schema-type", "", "`TYPE` of --schema: AVRO, PROTOBUF or JSON (default: PROTOBUF for a .proto file, else AVRO)")
	fs.Var(&f.references, "reference", "a file the --schema imports (Protobuf: NAME is the import path) or \"$ref\"s (JSON Schema: NAME as the $ref writes it), as `NAME=FILE`, registered under subject NAME first; repeatable; it may import only the well-known types itself")
	fs.StringVar(&f.message, "message", "", "Protobuf message `NAME` (full name, with the package) the events are (default: the file's root message, the first top-level message no other one holds)")
	fs.StringVar(&f.registry, "registry", "http://127.0.0.1:8081", "schema registry `URL` (with --schema)")
	fs.StringVar(&f.service, "service", "tributary-produce", "header.service of events that do not set it (with --schema)")
	fs.StringVar(&f.server, "server", "", "header.server of events that do not set it (default: the host name)")
	fs.StringVar(&f.auditTopic, "audit-topic", audit.DefaultTopic, "where the per-window counts are published (with --schema)")
	fs.StringVar(&f.headerField, "header-field", "header", "top-level `FIELD` of the events' record that holds their header (time, server); any record name or namespace is understood (with --schema)")
	fs.DurationVar(&f.window, "window", audit.DefaultWindow, "audit counting window (with --schema)")
	fs.DurationVar(&f.flushInterval, "audit-flush-interval", time.Minute, "how often the counts of closed windows are published (with --schema; at most half the window)")
	fs.StringVar(&f.wal, "audit-wal", "", "write-ahead log `DIR` of the audit counts (with --schema): a producer killed at any point neither loses nor double-counts them; "+
		"the next one started with the same DIR publishes what it left, and counts the records it had sent that the brokers hold. One DIR per producer")
}

// walPauseEnv names a point of the audit WAL (audit.WALFaultPoints) where
// `tributary produce` stops forever the first time it gets there, so a
// test can kill it exactly there.
const walPauseEnv = "TRIBUTARY_AUDIT_PAUSE_AT"

func walFault() func(string) {
	point := os.Getenv(walPauseEnv)
	if point == "" {
		return nil
	}
	if !slices.Contains(audit.WALFaultPoints, point) {
		fmt.Fprintf(os.Stderr, "tributary: %s=%q is not a fault point (%v); ignored\n", walPauseEnv, point, audit.WALFaultPoints)
		return nil
	}
	var once sync.Once
	return func(p string) {
		if p == point {
			once.Do(func() {
				fmt.Fprintf(os.Stderr, "tributary: paused at %s (%s)\n", p, walPauseEnv)
				select {}
			})
		}
	}
}

// produceEvents sends stdin's JSON events through an audit.Producer: each
// is counted by its header's time window and server once acknowledged,
// and the counts are published to the audit topic when their window
// closes and when stdin ends. A line that is not a valid event is
// skipped, counted malformed, and makes the command fail at the end.
func produceEvents(ctx context.Context, cl *kgo.Client, topic string, brokers []string, f avroFlags, shutdown time.Duration) error {
	text, err := os.ReadFile(f.schema)
	if err != nil {
		return fmt.Errorf("--schema: %w", err)
	}
	typ, err := f.schemaType()
	if err != nil {
		return err
	}
	reg, err := registryClient("--registry", f.registry, f.sec.registry)
	if err != nil {
		return err
	}
	enc, err := newEventEncoder(reg, typ, string(text), f)
	if err != nil {
		return fmt.Errorf("--schema %s (%s): %w", f.schema, typ, err)
	}
	// The counts go through their own client so they are sent with
	// acks=all whatever --acks says for the events.
	acl, err := f.sec.newKafkaClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer acl.Close()
	var wal *audit.WAL
	if f.wal != "" {
		if wal, err = audit.OpenWAL(f.wal, audit.WALOptions{Host: f.server, Fault: walFault()}); err != nil {
			return fmt.Errorf("--audit-wal: %w", err)
		}
	}
	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: acl, Registry: reg, Topic: f.auditTopic, Window: f.window, Host: f.server,
		FlushInterval: min(f.flushInterval, f.window/2), WAL: wal})
	if err != nil {
		if wal != nil {
			wal.Close()
		}
		return err
	}
	prod, err := enc.producer(cl, pub)
	if err != nil {
		return err
	}
	if wal != nil {
		// What a producer killed before left: counted before anything
		// new is sent, so a WAL that cannot be resolved stops us here.
		// A search that does not finish (brokers unreachable) leaves
		// the records doubtful: looked for again at each publish.
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		found, doubtful, err := prod.Recover(rctx)
		cancel()
		if err != nil {
			slog.Warn("produce: could not look in the brokers for the records a killed producer sent; looking again at each publish", "dir", f.wal, "err", err)
		}
		slog.Info("produce: audit WAL opened", "dir", f.wal, "publisher", wal.Name(), "records_found_and_counted", found, "records_still_looked_for", doubtful)
	}
	var (
		mu            sync.Mutex
		failed        error
		sent, skipped int
		firstBad      string
	)
	in := readLines(os.Stdin)
	for line := 1; ; line++ {
		b, ok := in.next(ctx)
		if !ok {
			break
		}
		if len(b) == 0 {
			continue
		}
		err := enc.send(ctx, prod, pub, topic, b, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && failed == nil {
				failed = fmt.Errorf("event on line %d: %w", line, err)
			}
			if err == nil {
				sent++
			}
		})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			skipped++
			if firstBad == "" {
				firstBad = fmt.Sprintf("line %d: %v", line, err)
			}
			slog.Warn("produce: skipping a line that is not a valid event", "line", line, "err", err)
		}
	}
	if ctx.Err() == nil && in.err != nil {
		return fmt.Errorf("reading stdin: %w", in.err)
	}
	ferr := flushBounded(ctx, prod.Flush, shutdown)
	// Publish the counts even when interrupted: what was acknowledged is
	// in the cluster and must be counted. Within the shutdown timeout:
	// brokers that never answer must not keep the process.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdown)
	defer cancel()
	perr := pub.Close(cctx)
	if perr != nil {
		for _, u := range pub.Unpublished() {
			fmt.Fprintf(os.Stderr, "audit counts NOT published: topic %s, window %s: %d events\n", u.Topic, u.Window.UTC().Format(time.RFC3339), u.N)
		}
		if wal != nil {
			fmt.Fprintf(os.Stderr, "they are kept in the audit WAL %s: the next `tributary produce --audit-wal %s` publishes them\n", f.wal, f.wal)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(os.Stderr, "produced %d events to %s", sent, topic)
	if skipped > 0 {
		fmt.Fprintf(os.Stderr, ", skipped %d lines", skipped)
	}
	if perr != nil {
		fmt.Fprintln(os.Stderr)
		perr = fmt.Errorf("publishing the audit counts: %w", perr)
	} else {
		fmt.Fprintf(os.Stderr, "; counts published to %s\n", f.auditTopic)
	}
	if skipped > 0 && failed == nil {
		failed = fmt.Errorf("%d lines were not valid events (see the warnings above; the first, %s)", skipped, firstBad)
	}
	return errors.Join(ferr, failed, perr)
}
