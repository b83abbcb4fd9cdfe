// Package internaltopic is the one list of Tributary's internal topics:
// the topics whose records are state owned by a Tributary component (the
// schema registry's _schemas, the audit's _audit, the transaction
// coordinator's __transaction_state). An ordinary Kafka client may read
// them but not change them: a forged record on _schemas could claim
// schema id 2^31-1 or hard-delete a live version, and deleting _schemas
// loses every schema.
//
// It promises: a topic is internal exactly when Is says so; an internal
// topic is created (CreateTopics, auto-creation) only in its Shape, and
// its configs are never changed to contradict Configs. Without an
// authorizer (with one, ACLs decide), Produce and DeleteTopics on an
// internal topic are admitted only from the client ids the broker admits
// (Refusal). The client id is chosen by the client, so this protects
// against accidents and buggy clients, not against an attacker. A
// component running inside the broker's process (the registry of
// `tributary standalone`) writes through the broker's AppendInternal
// instead and needs no client id at all.
package internaltopic

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/txn"
)

// topic is one topic the broker protects, and the shape it must have for
// its owner to work.
type topic struct {
	owner string // who writes it, for error messages
	// partitions is the required partition count, 0 for any: the registry
	// needs one partition, one order that every node reads.
	partitions int32
	// configs are required topic configs: the registry's topic is its only
	// copy of its state and must never lose records to retention, only
	// superseded ones to compaction.
	configs map[string]string
}

// topics is the one list of topics the broker owns.
var topics = map[string]topic{
	// _schemas is compacted, as Confluent's is: only the last record of
	// each key (a version, a config, a subject deletion) matters to a
	// registry replaying it, and hard-deleted versions' tombstones go after
	// delete.retention.ms. The registry keeps ids unique across what
	// compaction removes (schema/registry's state.apply).
	"_schemas": {owner: "the schema registry", partitions: 1, configs: map[string]string{"retention.ms": "-1", "cleanup.policy": "compact"}},
	"_audit":   {owner: "the audit publishers and the mirror"},
	// __transaction_state holds the transaction coordinator's state, one
	// record per transactional id: compacted, as Kafka's is.
	txn.StateTopic: {owner: "the transaction coordinator", configs: map[string]string{"cleanup.policy": "compact"}},
}

// Is reports whether the broker protects name.
func Is(name string) bool {
	_, ok := topics[name]
	return ok
}

// Names lists the internal topics.
func Names() []string {
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Required returns the configs internal topic name must have (nil for
// any other topic); the caller must not change the map.
func Required(name string) map[string]string { return topics[name].configs }

// Refusal returns a message saying why a client (clientID) of a broker
// without an authorizer may not do action (write, delete) on name, or ""
// when it may: admitted lists the client ids the broker admits
// (--internal-clients).
func Refusal(admitted []string, clientID, name, action string) string {
	it, ok := topics[name]
	if !ok || slices.Contains(admitted, clientID) {
		return ""
	}
	which := "no client ids are admitted"
	if len(admitted) > 0 {
		which = "admitted client ids: " + strings.Join(admitted, ", ")
	}
	return fmt.Sprintf("topic %s is internal to Tributary: only %s may %s it (client id %q is not admitted; %s; see --internal-clients)",
		name, it.owner, action, clientID, which)
}

// Shape fills in the required configs of an internal topic and returns an
// error (broker/kafkaerr) if the requested partitions or configs
// contradict its shape. Other topics pass unchanged.
func Shape(name string, partitions int32, configs map[string]string) (map[string]string, error) {
	it, ok := topics[name]
	if !ok {
		return configs, nil
	}
	if it.partitions != 0 && partitions != it.partitions {
		return nil, kafkaerr.New(kerr.InvalidPartitions, "topic %s is internal to Tributary and must have %d partition(s), not %d: %s depends on it",
			name, it.partitions, partitions, it.owner)
	}
	return Configs(name, configs)
}

// Configs fills in the required configs of an internal topic and returns
// an error (broker/kafkaerr) if configs contradict them (CreateTopics,
// AlterConfigs): nobody may, say, give _schemas a retention that loses
// schemas. Other topics pass unchanged.
func Configs(name string, configs map[string]string) (map[string]string, error) {
	it := topics[name]
	for k, want := range it.configs {
		if have, ok := configs[k]; ok && have != want {
			return nil, kafkaerr.New(kerr.InvalidConfig, "topic %s is internal to Tributary and must have %s=%s, not %s: %s depends on it",
				name, k, want, have, it.owner)
		}
		if configs == nil {
			configs = map[string]string{}
		}
		configs[k] = want
	}
	return configs, nil
}

// AutoCreateShape is the partition count and configs an auto-created
// topic gets: defaultPartitions and no configs, or an internal topic's own
// shape.
func AutoCreateShape(name string, defaultPartitions int32) (int32, map[string]string) {
	it, ok := topics[name]
	if !ok {
		return defaultPartitions, nil
	}
	n := it.partitions
	if n == 0 {
		n = defaultPartitions
	}
	configs, _ := Shape(name, n, nil)
	return n, configs
}
