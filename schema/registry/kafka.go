package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/kgolog"
)

// KafkaLogConfig configures OpenKafkaLog.
type KafkaLogConfig struct {
	// Bootstrap lists broker addresses (host:port). Required.
	Bootstrap []string
	// Topic holds the records. Default: DefaultTopic.
	Topic string
	// Logger receives the client's warnings. Default: slog.Default().
	Logger *slog.Logger
	// Opts are extra client options (TLS, SASL, client id, ...).
	Opts []kgo.Opt
	// Append, when set, writes records instead of producing them: the
	// in-process write path of a registry running inside the broker
	// (`tributary standalone`), which needs no admission to the internal
	// topic. It must return once the records are durable, with the offset
	// of the last.
	Append func(ctx context.Context, recs []Record) (last int64, err error)
}

// ClientID is the Kafka client id the registry's client uses: brokers
// admit writes to their internal _schemas topic only from listed client
// ids (broker.DefaultInternalClients lists this one).
const ClientID = "tributary-schema-registry"

// kafkaLog is a Log on a one-partition topic: every write is produced with
// acks=all, so an acknowledged write survives a broker crash and a node
// crash alike, and every node reads the partition from offset 0.
type kafkaLog struct {
	cl     *kgo.Client
	adm    *kadm.Client
	topic  string
	append func(ctx context.Context, recs []Record) (int64, error) // nil: produce
}

// OpenKafkaLog connects to the brokers and makes sure the topic exists with
// exactly one partition (one partition is one order that every node sees),
// retention.ms=-1 (the topic is the registry's only copy of its state) and
// cleanup.policy=compact (only a key's last record matters on replay).
func OpenKafkaLog(ctx context.Context, cfg KafkaLogConfig) (Log, error) {
	if len(cfg.Bootstrap) == 0 {
		return nil, errors.New("registry: no broker addresses to store schemas on (set Bootstrap)")
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Bootstrap...),
		kgo.ClientID(ClientID),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), // records carry partition 0
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.WithLogger(kgolog.New(cfg.Logger)),
	}, cfg.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry: kafka client for %v: %w", cfg.Bootstrap, err)
	}
	l := &kafkaLog{cl: cl, adm: kadm.NewClient(cl), topic: cfg.Topic, append: cfg.Append}
	if err := l.ensureTopic(ctx, cfg.Logger); err != nil {
		cl.Close()
		return nil, err
	}
	return l, nil
}

func (l *kafkaLog) ensureTopic(ctx context.Context, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	retention, compact := "-1", "compact"
	_, err := l.adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &retention, "cleanup.policy": &compact}, l.topic)
	switch {
	case err == nil:
		logger.Info("schema registry created its topic", "topic", l.topic)
	case errors.Is(err, kerr.TopicAlreadyExists):
		l.migrateToCompact(ctx, logger)
	default:
		return fmt.Errorf("registry: create topic %s: %w", l.topic, err)
	}
	// A topic just created may take a moment to appear in metadata.
	var d kadm.TopicDetail
	for {
		details, err := l.adm.ListTopics(ctx, l.topic)
		if err != nil {
			return fmt.Errorf("registry: describe topic %s: %w", l.topic, err)
		}
		d = details[l.topic]
		if d.Err == nil && len(d.Partitions) > 0 {
			break
		}
		if d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) && !errors.Is(d.Err, kerr.LeaderNotAvailable) {
			return fmt.Errorf("registry: describe topic %s: %w", l.topic, d.Err)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("registry: topic %s did not appear in the brokers' metadata: %w", l.topic, ctx.Err())
		}
	}
	if n := len(d.Partitions); n != 1 {
		return fmt.Errorf("registry: topic %s has %d partitions; it needs exactly 1 so that every node reads writes in one order (recreate it with one partition)", l.topic, n)
	}
	return nil
}

func (l *kafkaLog) Append(ctx context.Context, recs ...Record) (int64, error) {
	if l.append != nil {
		last, err := l.append(ctx, recs)
		if err != nil {
			return 0, fmt.Errorf("append to %s: %w", l.topic, err)
		}
		return last, nil
	}
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: l.topic, Partition: 0, Key: r.Key, Value: r.Value}
	}
	results := l.cl.ProduceSync(ctx, krs...)
	if err := results.FirstErr(); err != nil {
		return 0, fmt.Errorf("produce to %s: %w", l.topic, err)
	}
	last := int64(-1)
	for _, res := range results {
		last = max(last, res.Record.Offset)
	}
	return last, nil
}

// endWait bounds how long End waits for the topic's partition to show in
// the brokers' answer: the registry may have created the topic a moment
// before, and a broker's metadata can lag its creation briefly.
const endWait = 10 * time.Second

func (l *kafkaLog) End(ctx context.Context) (int64, error) {
	deadline := time.Now().Add(endWait)
	var o kadm.ListedOffset
	for {
		offs, err := l.adm.ListEndOffsets(ctx, l.topic)
		if err != nil {
			return 0, fmt.Errorf("list end offset of %s: %w", l.topic, err)
		}
		var ok bool
		if o, ok = offs.Lookup(l.topic, 0); ok {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("list end offset of %s: partition 0 missing from the answer for %s", l.topic, endWait)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("list end offset of %s: %w", l.topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if o.Err != nil {
		return 0, fmt.Errorf("list end offset of %s: %w", l.topic, o.Err)
	}
	return o.Offset, nil
}

func (l *kafkaLog) Next(ctx context.Context) ([]Record, error) {
	for {
		fs := l.cl.PollFetches(ctx)
		if fs.IsClientClosed() {
			return nil, errLogClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var errs []error
		fs.EachError(func(t string, p int32, err error) {
			errs = append(errs, fmt.Errorf("fetch %s[%d]: %w", t, p, err))
		})
		var out []Record
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, Record{Offset: r.Offset, Key: r.Key, Value: r.Value})
		})
		if len(out) > 0 {
			return out, nil
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
	}
}

// TopicID returns the topic's id, which a topic deleted and created again
// under the same name does not keep.
func (l *kafkaLog) TopicID(ctx context.Context) (string, error) {
	details, err := l.adm.ListTopics(ctx, l.topic)
	if err != nil {
		return "", fmt.Errorf("describe topic %s: %w", l.topic, err)
	}
	d := details[l.topic]
	if d.Err != nil {
		return "", fmt.Errorf("describe topic %s: %w", l.topic, d.Err)
	}
	return d.ID.String(), nil
}

func (l *kafkaLog) Close() error {
	l.cl.Close()
	return nil
}

// migrateToCompact makes a topic created before the registry asked for
// compaction (cleanup.policy=delete, retention.ms=-1) compacted, as the
// Confluent registry requires of its topic. A Tributary broker migrates
// its own _schemas at start; this covers other topic names and other
// Kafka brokers. Failing to migrate is logged, not fatal: the topic still
// keeps every record, it only grows without compaction.
func (l *kafkaLog) migrateToCompact(ctx context.Context, logger *slog.Logger) {
	rcs, err := l.adm.DescribeTopicConfigs(ctx, l.topic)
	if err == nil {
		var rc kadm.ResourceConfig
		if rc, err = rcs.On(l.topic, nil); err == nil {
			err = rc.Err
		}
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.MaybeValue() == "compact" {
				return
			}
		}
	}
	if err == nil {
		var rs kadm.AlterConfigsResponses
		rs, err = l.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, l.topic)
		if err == nil {
			var r kadm.AlterConfigsResponse
			if r, err = rs.On(l.topic, nil); err == nil && r.Err != nil {
				err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		logger.Warn("schema registry topic is not compacted and could not be made so; it keeps every record but grows without compaction (set cleanup.policy=compact on it)",
			"topic", l.topic, "err", err)
		return
	}
	logger.Info("schema registry topic migrated to cleanup.policy=compact", "topic", l.topic)
}
