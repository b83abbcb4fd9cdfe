package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/broker/log"
)

// brokerFlags are the settings shared by `standalone` and `broker`, named
// after Kafka's where one exists so that operators recognise them.
type brokerFlags struct {
	dataDir         string
	listen          string
	autoCreate      bool
	partitions      int
	segmentBytes    int64
	segmentAge      time.Duration
	flushMessages   int64
	flushInterval   time.Duration
	retention       time.Duration
	retentionBytes  int64
	maxRequestBytes int
	maxMessageBytes int
	maxTopics       int
	maxPartitions   int
}

func (f *brokerFlags) register(fs *flag.FlagSet, defaultListen string) {
	d := log.Config{}.WithDefaults()
	fs.StringVar(&f.dataDir, "data-dir", "./data", "directory of the partition logs")
	fs.StringVar(&f.listen, "listen", defaultListen, "Kafka protocol listen address `host:port` (also the address advertised to clients)")
	fs.BoolVar(&f.autoCreate, "auto-create-topics", true, "create unknown topics on first use (auto.create.topics.enable)")
	fs.IntVar(&f.partitions, "partitions", 1, "partitions of auto-created topics (num.partitions)")
	fs.Int64Var(&f.segmentBytes, "segment-bytes", d.SegmentBytes, "roll a segment at this size (segment.bytes)")
	fs.DurationVar(&f.segmentAge, "segment-age", d.SegmentAge, "roll a segment when its first batch is this old (segment.ms)")
	fs.Int64Var(&f.flushMessages, "flush-messages", d.FlushMessages, "fsync after this many unflushed messages (flush.messages)")
	fs.DurationVar(&f.flushInterval, "flush-interval", d.FlushInterval, "fsync unflushed data at least this often (flush.ms)")
	fs.DurationVar(&f.retention, "retention", d.RetentionAge, "delete segments older than this; negative keeps forever (retention.ms)")
	fs.Int64Var(&f.retentionBytes, "retention-bytes", d.RetentionBytes, "delete old segments while a partition is larger than this; -1: no limit (retention.bytes)")
	fs.IntVar(&f.maxRequestBytes, "max-request-bytes", 100<<20, "largest request frame accepted (socket.request.max.bytes)")
	fs.IntVar(&f.maxMessageBytes, "max-message-bytes", 1<<20+12, "largest record batch accepted (message.max.bytes)")
	fs.IntVar(&f.maxTopics, "max-topics", 10000, "refuse creating topics beyond this many; -1: no limit")
	fs.IntVar(&f.maxPartitions, "max-partitions", 20000, "refuse creating topics that would make this broker host more partitions; -1: no limit")
}

func (f *brokerFlags) config() broker.Config {
	return broker.Config{
		DataDir:           f.dataDir,
		AutoCreateTopics:  f.autoCreate,
		DefaultPartitions: int32(f.partitions),
		MaxRequestBytes:   int32(f.maxRequestBytes),
		MaxMessageBytes:   int32(f.maxMessageBytes),
		MaxTopics:         f.maxTopics,
		MaxPartitions:     f.maxPartitions,
		Log: log.Config{
			SegmentBytes:   f.segmentBytes,
			SegmentAge:     f.segmentAge,
			FlushMessages:  f.flushMessages,
			FlushInterval:  f.flushInterval,
			RetentionAge:   f.retention,
			RetentionBytes: f.retentionBytes,
		},
		Logger: slog.Default(),
	}
}

// serveBroker runs b on ln until ctx ends, then shuts it down gracefully.
func serveBroker(ctx context.Context, b *broker.Broker, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- b.Serve(ln) }()
	select {
	case err := <-errc:
		b.Close()
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	slog.Info("shutting down: finishing in-flight requests and flushing")
	return b.Close()
}
