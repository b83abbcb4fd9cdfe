package txn

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// StateTopic is Kafka's name for the topic the coordinator keeps its state
// in, one compacted record per transactional id.
const StateTopic = "__transaction_state"

// State is a transaction's state, with Kafka's codes (they are stored in
// __transaction_state and shown by DescribeTransactions by name).
type State int8

const (
	Empty          State = 0
	Ongoing        State = 1
	PrepareCommit  State = 2
	PrepareAbort   State = 3
	CompleteCommit State = 4
	CompleteAbort  State = 5
	Dead           State = 6
)

// String is the state as Kafka's tools print it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case Ongoing:
		return "Ongoing"
	case PrepareCommit:
		return "PrepareCommit"
	case PrepareAbort:
		return "PrepareAbort"
	case CompleteCommit:
		return "CompleteCommit"
	case CompleteAbort:
		return "CompleteAbort"
	case Dead:
		return "Dead"
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// TP is a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

// Offset is a consumer group offset committed inside a transaction.
type Offset struct {
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata,omitempty"`
}

// meta is one transactional id's state. Its fields are guarded by mu,
// which also serializes the operations on the id (they write the state
// and markers while holding it).
type meta struct {
	id         string
	producerID int64
	epoch      int16
	timeoutMs  int32
	state      State
	partitions map[TP]bool
	groups     map[string]bool
	// pending are the offsets TxnOffsetCommit sent, per group, made
	// visible by the commit and dropped by an abort.
	pending    map[string]map[TP]Offset
	start      time.Time // when the open transaction began
	lastUpdate time.Time
	// prevEpoch is the epoch before the last bump (-1: unknown, as after
	// a restart). A producer whose transaction the coordinator aborted
	// for its timeout still holds it and may recover with InitProducerId
	// naming it (KIP-360); the bump that fences for a new instance is
	// followed by a second one, so the fenced instance's epoch is never
	// prevEpoch.
	prevEpoch int16
	// marked are the partitions whose markers for the decision at
	// markedEpoch are durable, kept in memory only: a completion that
	// failed in some partitions retries those alone. After a reload it is
	// empty and every marker is written again, which partitions accept.
	marked      map[TP]bool
	markedEpoch int16
}

func (m *meta) resetTxn() {
	m.partitions, m.groups, m.pending, m.marked = nil, nil, nil, nil
}

// unmarked is the transaction's partitions whose markers for the current
// decision are not known to be written, sorted.
func (m *meta) unmarked() []TP {
	if m.markedEpoch != m.epoch {
		m.marked = nil
	}
	return slices.DeleteFunc(m.sortedPartitions(), func(tp TP) bool { return m.marked[tp] })
}

// markWritten records that the markers of parts, but for failed, are
// durable at the current epoch (failed nil with an error: none is known).
func (m *meta) markWritten(parts, failed []TP, err error) {
	if err != nil && failed == nil {
		return
	}
	if m.marked == nil || m.markedEpoch != m.epoch {
		m.marked, m.markedEpoch = map[TP]bool{}, m.epoch
	}
	for _, tp := range parts {
		if !slices.Contains(failed, tp) {
			m.marked[tp] = true
		}
	}
}

// PartitionFor is the __transaction_state partition holding id's state,
// as Kafka places it: the Java hash of the id, modulo the partitions.
func PartitionFor(id string, partitions int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(id)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		return 0 // Kafka's Utils.abs
	}
	if h < 0 {
		h = -h
	}
	return h % partitions
}

// extraTag holds what Kafka's value has no field for: the groups of the
// transaction and their pending offsets. Kafka's readers skip unknown tags.
const extraTag = 10000

type extra struct {
	Groups  []string                        `json:"groups,omitempty"`
	Pending map[string]map[string][]pOffset `json:"pending,omitempty"`
}

type pOffset struct {
	Partition int32 `json:"p"`
	Offset
}

// encodeKey and encodeValue are Kafka's __transaction_state records: key
// version 0 (the transactional id), value version 1 (flexible).
func encodeKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = id
	return k.AppendTo(nil)
}

func (m *meta) encodeValue() []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 1
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.producerID, m.epoch, m.timeoutMs
	v.State = kmsg.TransactionState(m.state)
	v.LastUpdateTimestamp = m.lastUpdate.UnixMilli()
	v.StartTimestamp = -1
	if !m.start.IsZero() {
		v.StartTimestamp = m.start.UnixMilli()
	}
	v.PreviousProducerID, v.NextProducerID, v.NextProducerEpoch = -1, -1, -1
	byTopic := map[string][]int32{}
	for tp := range m.partitions {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	for _, t := range slices.Sorted(maps.Keys(byTopic)) {
		vt := kmsg.NewTxnMetadataValueTopic()
		vt.Topic, vt.Partitions = t, slices.Sorted(slices.Values(byTopic[t]))
		v.Topics = append(v.Topics, vt)
	}
	if len(m.groups) > 0 {
		e := extra{Groups: slices.Sorted(maps.Keys(m.groups))}
		for g, offs := range m.pending {
			if e.Pending == nil {
				e.Pending = map[string]map[string][]pOffset{}
			}
			byT := map[string][]pOffset{}
			for tp, o := range offs {
				byT[tp.Topic] = append(byT[tp.Topic], pOffset{Partition: tp.Partition, Offset: o})
			}
			e.Pending[g] = byT
		}
		b, _ := json.Marshal(e)
		v.UnknownTags.Set(extraTag, b)
	}
	return v.AppendTo(nil)
}

// decodeRecord reads one __transaction_state record: the id and, unless
// the record is a tombstone (nil meta), its state.
func decodeRecord(key, value []byte) (string, *meta, error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, fmt.Errorf("transaction state key %x: %w", key, err)
	}
	if k.Version != 0 {
		return "", nil, fmt.Errorf("transaction state key version %d", k.Version)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return "", nil, fmt.Errorf("transaction state of %q: %w", k.TransactionalID, err)
	}
	m := &meta{id: k.TransactionalID, producerID: v.ProducerID, epoch: v.ProducerEpoch, prevEpoch: -1,
		timeoutMs: v.TimeoutMillis, state: State(v.State), lastUpdate: time.UnixMilli(v.LastUpdateTimestamp)}
	if m.state < Empty || m.state > Dead || m.producerID < 0 {
		return "", nil, fmt.Errorf("transaction state of %q: state %d, producer id %d", m.id, v.State, m.producerID)
	}
	if v.StartTimestamp >= 0 && m.state != Empty {
		m.start = time.UnixMilli(v.StartTimestamp)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			if m.partitions == nil {
				m.partitions = map[TP]bool{}
			}
			m.partitions[TP{t.Topic, p}] = true
		}
	}
	var errTag error
	v.UnknownTags.Each(func(tag uint32, b []byte) {
		if tag != extraTag {
			return
		}
		var e extra
		if err := json.Unmarshal(b, &e); err != nil {
			errTag = fmt.Errorf("transaction state of %q: groups: %w", m.id, err)
			return
		}
		for _, g := range e.Groups {
			if m.groups == nil {
				m.groups = map[string]bool{}
			}
			m.groups[g] = true
		}
		for g, byT := range e.Pending {
			for t, offs := range byT {
				for _, o := range offs {
					m.addPending(g, TP{t, o.Partition}, o.Offset)
				}
			}
		}
	})
	return m.id, m, errTag
}

func (m *meta) addPending(group string, tp TP, o Offset) {
	if m.pending == nil {
		m.pending = map[string]map[TP]Offset{}
	}
	if m.pending[group] == nil {
		m.pending[group] = map[TP]Offset{}
	}
	m.pending[group][tp] = o
}

// sortedPartitions lists the transaction's partitions in order.
func (m *meta) sortedPartitions() []TP {
	out := slices.Collect(maps.Keys(m.partitions))
	slices.SortFunc(out, func(a, b TP) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}
