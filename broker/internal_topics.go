package broker

// Internal topics: the topics whose records are state owned by a Tributary
// component (the schema registry's _schemas, the audit's _audit). An
// ordinary Kafka client may read them but not change them: a forged record
// on _schemas could claim schema id 2^31-1 or hard-delete a live version,
// and deleting _schemas loses every schema.
//
// The rule when no authorizer is configured (with one, ACLs decide, see
// internalRefusal): Produce and DeleteTopics on an internal
// topic are admitted only from the client ids in Config.InternalClients
// (by default the schema registry's and the audit publishers'), and a
// CreateTopics of one must have its required shape (partition count and
// configs) whoever sends it. The client id is chosen by the client, so this
// protects against accidents and buggy clients, not against an attacker. A
// component running inside the broker's process (the registry of
// `tributary standalone`) writes through AppendInternal instead and needs
// no client id at all.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/internal/recordbatch"
)

// internalTopic is one topic the broker protects, and the shape it must
// have for its owner to work.
type internalTopic struct {
	owner string // who writes it, for error messages
	// partitions is the required partition count, 0 for any: the registry
	// needs one partition, one order that every node reads.
	partitions int32
	// configs are required topic configs: the registry's topic is its only
	// copy of its state and must never lose records to retention, only
	// superseded ones to compaction.
	configs map[string]string
}

// internalTopics is the one list of topics the broker owns.
var internalTopics = map[string]internalTopic{
	// _schemas is compacted, as Confluent's is: only the last record of
	// each key (a version, a config, a subject deletion) matters to a
	// registry replaying it, and hard-deleted versions' tombstones go after
	// delete.retention.ms. The registry keeps ids unique across what
	// compaction removes (schema/registry's state.apply).
	"_schemas": {owner: "the schema registry", partitions: 1, configs: map[string]string{"retention.ms": "-1", "cleanup.policy": "compact"}},
	"_audit":   {owner: "the audit publishers and the mirror"},
	// __transaction_state holds the transaction coordinator's state, one
	// record per transactional id: compacted, as Kafka's is.
	txnStateTopic: {owner: "the transaction coordinator", configs: map[string]string{"cleanup.policy": "compact"}},
}

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
func IsInternalTopic(topic string) bool {
	_, ok := internalTopics[topic]
	return ok
}

// internalRefusal returns a message saying why a client without an
// authorizer may not write or delete topic (action), or "" when it may:
// the client-id rule above guards the internal topics. With an authorizer
// the ACLs decide instead (Produce and DeleteTopics ask topicRefusal).
func (b *Broker) internalRefusal(clientID, topic, action string) string {
	it, ok := internalTopics[topic]
	if !ok || slices.Contains(b.cfg.InternalClients, clientID) {
		return ""
	}
	admitted := "no client ids are admitted"
	if len(b.cfg.InternalClients) > 0 {
		admitted = "admitted client ids: " + strings.Join(b.cfg.InternalClients, ", ")
	}
	return fmt.Sprintf("topic %s is internal to Tributary: only %s may %s it (client id %q is not admitted; %s; see --internal-clients)",
		topic, it.owner, action, clientID, admitted)
}

// internalShape fills in the required configs of an internal topic and
// returns an error if the requested partitions or configs contradict its
// shape. Other topics pass unchanged.
func internalShape(topic string, partitions int32, configs map[string]string) (map[string]string, error) {
	it, ok := internalTopics[topic]
	if !ok {
		return configs, nil
	}
	if it.partitions != 0 && partitions != it.partitions {
		return nil, kafkaerr.New(kerr.InvalidPartitions, "topic %s is internal to Tributary and must have %d partition(s), not %d: %s depends on it",
			topic, it.partitions, partitions, it.owner)
	}
	return internalConfigs(topic, configs)
}

// internalConfigs fills in the required configs of an internal topic and
// returns an error if configs contradict them (CreateTopics, AlterConfigs):
// nobody may, say, give _schemas a retention that loses schemas. Other
// topics pass unchanged.
func internalConfigs(topic string, configs map[string]string) (map[string]string, error) {
	it := internalTopics[topic]
	for k, want := range it.configs {
		if have, ok := configs[k]; ok && have != want {
			return nil, kafkaerr.New(kerr.InvalidConfig, "topic %s is internal to Tributary and must have %s=%s, not %s: %s depends on it",
				topic, k, want, have, it.owner)
		}
		if configs == nil {
			configs = map[string]string{}
		}
		configs[k] = want
	}
	return configs, nil
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
	for name, it := range internalTopics {
		t, ok := b.meta.Topic(name)
		if !ok {
			continue
		}
		next := maps.Clone(t.Configs)
		for k, want := range it.configs {
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
				"topic", name, "configs", t.Configs, "needs", it.configs, "err", err)
			continue
		}
		b.logger.Info("internal topic migrated to the configs it needs", "topic", name, "from", t.Configs, "to", next)
	}
}

// autoCreateShape is the partition count and configs an auto-created
// topic gets: the broker's defaults, or an internal topic's own shape.
func (b *Broker) autoCreateShape(topic string) (int32, map[string]string) {
	it, ok := internalTopics[topic]
	if !ok {
		return b.cfg.DefaultPartitions, nil
	}
	n := it.partitions
	if n == 0 {
		n = b.cfg.DefaultPartitions
	}
	configs, _ := internalShape(topic, n, nil)
	return n, configs
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
