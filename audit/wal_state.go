package audit

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// walState is what a WAL says: the publisher's name and numbering, the
// counts not yet built into monitoring events, the events built and not
// yet acknowledged, and the records sent whose acknowledgement is not yet
// written (intents).
type walState struct {
	Name       string
	Seq        int64 // last monitoring event sequence used
	Prev       []Prior
	Beat       time.Time
	Pending    *Counts
	Outbox     []*Event
	NextIntent uint64
	Intents    map[uint64]*walIntent
}

func newWALState(name string) *walState {
	return &walState{Name: name, Pending: NewCounts(), Intents: map[uint64]*walIntent{}}
}

// Kinds of intents and direct counts.
const (
	kindEvent     byte = iota // counted in a window of event time
	kindNoTime                // no usable header time: by the window seen
	kindMalformed             // does not decode: by the window seen
)

// walIntent is a record about to be sent (Seq > 0), or a direct count
// (Seq 0), and where it counts.
type walIntent struct {
	Seq    uint64
	Hash   [16]byte // recordHash
	Sent   int64    // ms: the record's timestamp, set before it is sent
	Kind   byte
	Topic  string
	Window int64 // ms
	Server string
	Event  int64 // ms: header time, for the latency
	N      int64
}

func (in *walIntent) encode(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, in.Seq)
	dst = append(dst, in.Hash[:]...)
	dst = binary.AppendVarint(dst, in.Sent)
	dst = append(dst, in.Kind)
	dst = binary.AppendUvarint(dst, uint64(len(in.Topic)))
	dst = append(dst, in.Topic...)
	dst = binary.AppendVarint(dst, in.Window)
	dst = binary.AppendUvarint(dst, uint64(len(in.Server)))
	dst = append(dst, in.Server...)
	dst = binary.AppendVarint(dst, in.Event)
	return binary.AppendVarint(dst, in.N)
}

func decodeIntent(b []byte) (*walIntent, error) {
	d := walDecoder{b: b}
	in := &walIntent{Seq: d.uvarint()}
	copy(in.Hash[:], d.bytes(16))
	in.Sent = d.varint()
	in.Kind = d.byte()
	in.Topic = string(d.bytes(int(d.uvarint())))
	in.Window = d.varint()
	in.Server = string(d.bytes(int(d.uvarint())))
	in.Event = d.varint()
	in.N = d.varint()
	if d.err == nil && (len(d.b) != 0 || in.Kind > kindMalformed || in.N <= 0) {
		d.err = errors.New("an intent record does not decode")
	}
	return in, d.err
}

// count adds the intent's events to c; bucket is their latency's.
func (c *Counts) addIntent(in *walIntent, bucket int) {
	tw := TopicWindow{Topic: in.Topic, Window: time.UnixMilli(in.Window).UTC()}
	switch in.Kind {
	case kindEvent:
		c.Events[Key{Topic: in.Topic, Window: tw.Window, Server: in.Server}] += in.N
		c.addLatency(tw, bucket, in.N)
	case kindNoTime:
		c.NoTime[tw] += in.N
	default:
		c.Malformed[tw] += in.N
	}
}

// addLatency adds n events of latency bucket lat to the histogram of k.
func (c *Counts) addLatency(k TopicWindow, lat int, n int64) {
	if c.Latency == nil {
		c.Latency = map[TopicWindow][]int64{}
	}
	b := c.Latency[k]
	for len(b) <= lat {
		b = append(b, 0)
	}
	b[lat] += n
	c.Latency[k] = b
}

// walAck is an intent counted, with its latency bucket.
type walAck struct {
	seq    uint64
	bucket int
}

func encodeAcks(dst []byte, acks []walAck) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(acks)))
	for _, a := range acks {
		dst = binary.AppendUvarint(dst, a.seq)
		dst = binary.AppendUvarint(dst, uint64(a.bucket))
	}
	return dst
}

func encodeSeqs[T uint64 | int64](dst []byte, seqs []T) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(seqs)))
	for _, s := range seqs {
		dst = binary.AppendUvarint(dst, uint64(s))
	}
	return dst
}

// walBuiltRecord is a B record: monitoring events built from the
// pending counts, and the latest closed window announced.
type walBuiltRecord struct {
	Beat   time.Time
	Events []*Event
}

// pushPrior puts e at the front of an event's list of earlier events.
func pushPrior(prev []Prior, e *Event) []Prior {
	prev = slices.Insert(prev, 0, Prior{Sequence: e.Sequence, Window: e.Window, Topics: eventTopics(e)})
	if len(prev) > maxPrevious {
		prev = prev[:maxPrevious]
	}
	return prev
}

// replayRecord applies one record to the state, as the live publisher
// did when it wrote it.
func replayRecord(stp **walState, typ byte, p []byte) error {
	if typ == recCheckpoint {
		st, err := decodeCheckpoint(p)
		*stp = st
		return err
	}
	st := *stp
	switch typ {
	case recIntent:
		in, err := decodeIntent(p)
		if err != nil {
			return err
		}
		if in.Seq == 0 || in.Seq < st.NextIntent {
			return fmt.Errorf("intent %d is out of order (next is %d)", in.Seq, st.NextIntent)
		}
		st.Intents[in.Seq] = in
		st.NextIntent = in.Seq + 1
	case recCount:
		in, err := decodeIntent(p)
		if err != nil {
			return err
		}
		st.Pending.addIntent(in, latencyBucket(time.Duration(in.Sent-in.Event)*time.Millisecond))
	case recAcks, recDrops:
		d := walDecoder{b: p}
		for n := d.uvarint(); n > 0 && d.err == nil; n-- {
			seq := d.uvarint()
			bucket := 0
			if typ == recAcks {
				bucket = int(d.uvarint())
			}
			in := st.Intents[seq]
			if d.err == nil && (in == nil || bucket >= latencyBuckets) {
				return fmt.Errorf("record %c names intent %d, which the WAL does not hold", typ, seq)
			}
			if typ == recAcks {
				st.Pending.addIntent(in, bucket)
			}
			delete(st.Intents, seq)
		}
		if d.err == nil && len(d.b) != 0 {
			d.err = errors.New("trailing bytes")
		}
		return d.err
	case recBuilt:
		var b walBuiltRecord
		if err := json.Unmarshal(p, &b); err != nil {
			return err
		}
		for _, e := range b.Events {
			if e == nil || e.Sequence != st.Seq+1 {
				return fmt.Errorf("monitoring events out of sequence after %d", st.Seq)
			}
			if len(e.Counts)+len(e.NoTime)+len(e.Malformed) > 0 {
				st.Pending.take(e.Window)
				st.Pending.takeLatency(e.Window)
			}
			st.Seq = e.Sequence
			st.Prev = pushPrior(st.Prev, e)
			st.Outbox = append(st.Outbox, e)
		}
		st.Beat = b.Beat
	case recPublished:
		d := walDecoder{b: p}
		acked := map[int64]bool{}
		for n := d.uvarint(); n > 0 && d.err == nil; n-- {
			acked[int64(d.uvarint())] = true
		}
		st.Outbox = slices.DeleteFunc(st.Outbox, func(e *Event) bool { return acked[e.Sequence] })
		return d.err
	default:
		return fmt.Errorf("unknown record type %q", typ)
	}
	return nil
}

// The checkpoint's JSON form: Counts' maps keyed by structs become lists.
type walCheckpointJSON struct {
	Name       string
	Seq        int64
	Prev       []Prior
	Beat       time.Time
	Events     []walKeyCount
	NoTime     []walKeyCount
	Malformed  []walKeyCount
	Latency    []walLatency
	Outbox     []*Event
	NextIntent uint64
	Intents    []*walIntent
}

type walKeyCount struct {
	Topic  string
	Window time.Time
	Server string `json:",omitempty"`
	N      int64
}

type walLatency struct {
	Topic   string
	Window  time.Time
	Buckets []int64
}

func (st *walState) checkpoint() ([]byte, error) {
	cp := walCheckpointJSON{Name: st.Name, Seq: st.Seq, Prev: st.Prev, Beat: st.Beat, Outbox: st.Outbox, NextIntent: st.NextIntent}
	for k, n := range st.Pending.Events {
		cp.Events = append(cp.Events, walKeyCount{k.Topic, k.Window, k.Server, n})
	}
	for k, n := range st.Pending.NoTime {
		cp.NoTime = append(cp.NoTime, walKeyCount{Topic: k.Topic, Window: k.Window, N: n})
	}
	for k, n := range st.Pending.Malformed {
		cp.Malformed = append(cp.Malformed, walKeyCount{Topic: k.Topic, Window: k.Window, N: n})
	}
	for k, b := range st.Pending.Latency {
		cp.Latency = append(cp.Latency, walLatency{k.Topic, k.Window, b})
	}
	for _, in := range st.Intents {
		cp.Intents = append(cp.Intents, in)
	}
	slices.SortFunc(cp.Intents, func(a, b *walIntent) int { return int(a.Seq) - int(b.Seq) })
	return json.Marshal(cp)
}

func decodeCheckpoint(p []byte) (*walState, error) {
	var cp walCheckpointJSON
	if err := json.Unmarshal(p, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if cp.Name == "" {
		return nil, errors.New("checkpoint without a publisher name")
	}
	st := newWALState(cp.Name)
	st.Seq, st.Prev, st.Beat, st.Outbox, st.NextIntent = cp.Seq, cp.Prev, cp.Beat, cp.Outbox, cp.NextIntent
	for _, c := range cp.Events {
		st.Pending.Events[Key{c.Topic, c.Window, c.Server}] = c.N
	}
	for _, c := range cp.NoTime {
		st.Pending.NoTime[TopicWindow{c.Topic, c.Window}] = c.N
	}
	for _, c := range cp.Malformed {
		st.Pending.Malformed[TopicWindow{c.Topic, c.Window}] = c.N
	}
	for _, l := range cp.Latency {
		if len(l.Buckets) > latencyBuckets {
			return nil, errors.New("checkpoint: a latency histogram is too long")
		}
		if st.Pending.Latency == nil {
			st.Pending.Latency = map[TopicWindow][]int64{}
		}
		st.Pending.Latency[TopicWindow{l.Topic, l.Window}] = l.Buckets
	}
	for _, in := range cp.Intents {
		if in == nil || in.Seq == 0 || in.Seq >= st.NextIntent {
			return nil, errors.New("checkpoint: an intent is out of range")
		}
		st.Intents[in.Seq] = in
	}
	for _, e := range st.Outbox {
		if e == nil {
			return nil, errors.New("checkpoint: an empty monitoring event")
		}
	}
	return st, nil
}

// walDecoder reads varints and bytes, keeping the first error.
type walDecoder struct {
	b   []byte
	err error
}

func (d *walDecoder) fail() {
	if d.err == nil {
		d.err = errors.New("a record is cut short")
	}
	d.b = nil
}

func (d *walDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *walDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *walDecoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *walDecoder) bytes(n int) []byte {
	if n < 0 || n > len(d.b) {
		d.fail()
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}
