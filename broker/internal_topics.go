package broker

// Internal topics: which topics are internal, their shape and the
// client-id rule are broker/internaltopic's. Here are the client ids the
// broker admits by default, the rule as Produce asks it (dataapi.Config.InternalRefusal), the
// migration of internal topics created with older configs, and
// AppendInternal, the write path of components in the broker's process.

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/internaltopic"
	"github.com/tributary-io/tributary/internal/recordbatch"
)

// The client ids the broker admits to internal topics by default: the
// registry (schema/registry), the audit publishers (audit) and the mirror,
// which copies _audit between clusters (mirror) set them.
const (
	RegistryClientID = "tributary-schema-registry"
	AuditClientID    = "tributary-audit"
	MirrorClientID   = "tributary-mirror"
)

// DefaultInternalClients is the default of Config.InternalClients.
var DefaultInternalClients = []string{RegistryClientID, AuditClientID, MirrorClientID}

// IsInternalTopic reports whether the broker protects topic.
func IsInternalTopic(topic string) bool { return internaltopic.Is(topic) }

// internalRefusal returns a message saying why a client without an
// authorizer may not write or delete topic (action), or "" when it may
// (internaltopic.Refusal over Config.InternalClients). With an authorizer
// the ACLs decide instead.
func (b *Broker) internalRefusal(clientID, topic, action string) string {
	return internaltopic.Refusal(b.cfg.InternalClients, clientID, topic, action)
}

// migrateInternalTopics gives internal topics created before their
// required configs changed the configs they must now have: a _schemas
// topic of an older data directory (or ZooKeeper cluster) was created with
// cleanup.policy=delete and retention.ms=-1, before it became compacted.
// It runs in New before any partition opens, so partitions open with the
// new configs; in a cluster every broker runs it and the first one to
// start changes the shared configs. A failure is logged, not fatal: the
// old configs keep everything (retention.ms=-1), they only do not compact.
func (b *Broker) migrateInternalTopics() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range internaltopic.Names() {
		t, ok := b.meta.Topic(name)
		if !ok {
			continue
		}
		required := internaltopic.Required(name)
		next := maps.Clone(t.Configs)
		for k, want := range required {
			if next[k] != want {
				if next == nil {
					next = map[string]string{}
				}
				next[k] = want
			}
		}
		if maps.Equal(next, t.Configs) {
			continue
		}
		if _, err := b.meta.SetTopicConfigs(ctx, name, next); err != nil {
			b.logger.Error("internal topic keeps configs older than the ones it needs; restart the broker to retry",
				"topic", name, "configs", t.Configs, "needs", required, "err", err)
			continue
		}
		b.logger.Info("internal topic migrated to the configs it needs", "topic", name, "from", t.Configs, "to", next)
	}
}

// InternalRecord is one record written by AppendInternal. A nil Value is a
// tombstone.
type InternalRecord struct {
	Key, Value []byte
}

// AppendInternal appends recs, in order and in one batch, to a partition
// of a topic this broker stores, and returns the offset of the last once
// it is flushed (as acks=all would). It is the write path of components
// that run in the broker's process, such as the schema registry of
// `tributary standalone`: it bypasses the internal-topic admission rule,
// which only guards the wire.
func (b *Broker) AppendInternal(ctx context.Context, topic string, partition int32, recs []InternalRecord) (int64, error) {
	if len(recs) == 0 {
		return -1, fmt.Errorf("append to %s[%d]: no records", topic, partition)
	}
	t, code := b.lookupTopic(topic, false)
	if code != 0 {
		return -1, fmt.Errorf("append to %s[%d]: %w", topic, partition, kerr.ErrorForCode(code))
	}
	part, code := b.replicas.Lookup(t, partition)
	if code != 0 {
		return -1, fmt.Errorf("append to %s[%d]: %w", topic, partition, kerr.ErrorForCode(code))
	}
	l := part.Log()
	res, err := l.Append(encodeBatch(time.Now(), recs))
	if err != nil {
		return -1, fmt.Errorf("append to %s[%d]: %w", topic, partition, err)
	}
	if err := l.WaitFlushed(ctx, res.LastOffset); err != nil {
		return -1, fmt.Errorf("append to %s[%d]: waiting for the flush: %w", topic, partition, err)
	}
	return res.LastOffset, nil
}

// encodeBatch encodes recs as one RecordBatch v2 of a non-idempotent
// producer, the format the log stores.
func encodeBatch(at time.Time, recs []InternalRecord) []byte {
	var records []byte
	for i, r := range recs {
		kr := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		// AppendTo writes the length it is given; measure the body first.
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		records = kr.AppendTo(records)
	}
	ms := at.UnixMilli()
	batch := kmsg.RecordBatch{
		Length:          int32(recordbatch.MinLength + len(records)), // the header after the length field, then the records
		Magic:           2,
		LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp:  ms,
		MaxTimestamp:    ms,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(recs)),
		Records:         records,
	}
	raw := batch.AppendTo(nil)
	recordbatch.SetCRC(raw)
	return raw
}
