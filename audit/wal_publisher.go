package audit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// walSettle is how long after the process that sent a record died (or
// after its client gave it up) the record's absence from the brokers is
// believed: a produce request the brokers had received may still be
// written, and become readable, a moment later.
const walSettle = 30 * time.Second

// walAckBatch is how many acknowledgements are written to the WAL at
// once. One not yet written when the process dies is not lost: its
// record is found in the brokers.
const walAckBatch = 64

// adoptWAL makes p publish under the WAL's name and numbering, from the
// state an earlier process left. Every intent it left is doubtful: it
// is counted if the brokers hold its record (see resolveDoubtful).
func (p *Publisher) adoptWAL(w *WAL) {
	st := w.st
	p.wal = w
	p.id, p.source, p.fixedIDs = st.Name, st.Name, true
	p.log = p.cfg.Logger.With("audit_tier", p.cfg.Tier, "audit_publisher", st.Name)
	p.seq, p.prev, p.beat, p.pending, p.outbox = st.Seq, st.Prev, st.Beat, st.Pending, st.Outbox
	p.walDoubt = map[uint64]time.Time{}
	for seq := range st.Intents {
		p.walDoubt[seq] = w.opened
	}
}

// recordHash identifies a record among those the brokers hold: its value
// and headers (a mirror's copies of equal values differ by their origin
// hop).
func recordHash(r *kgo.Record) [16]byte {
	d := sha256.New()
	var n [8]byte
	put := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		d.Write(n[:])
		d.Write(b)
	}
	put(r.Value)
	for _, h := range r.Headers {
		put([]byte(h.Key))
		put(h.Value)
	}
	var h [16]byte
	copy(h[:], d.Sum(nil))
	return h
}

// walIntend writes the intent of sending r before it is sent. r's
// timestamp is set if it was not: recovery looks for the record by
// timestamp from the intent's time on. It returns the intent's number.
func (p *Publisher) walIntend(r *kgo.Record, kind byte, window time.Time, server string, eventTime time.Time) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Now().Truncate(time.Millisecond)
	if r.Timestamp.IsZero() {
		r.Timestamp = now
	}
	st := p.wal.st
	in := &walIntent{Seq: max(st.NextIntent, 1), Hash: recordHash(r), Sent: min(now.UnixMilli(), r.Timestamp.UnixMilli()), Kind: kind,
		Topic: r.Topic, Window: window.UnixMilli(), Server: server, Event: eventTime.UnixMilli(), N: 1}
	if err := p.wal.append(recIntent, in.encode(nil)); err != nil {
		return 0, err
	}
	st.Intents[in.Seq] = in
	st.NextIntent = in.Seq + 1
	return in.Seq, nil
}

// walAcked counts an acknowledged record: once its acknowledgement is
// written to the WAL (in a batch, or before the next publish).
func (p *Publisher) walAcked(seq uint64) {
	p.wal.pause("acked")
	p.mu.Lock()
	defer p.mu.Unlock()
	in := p.wal.st.Intents[seq]
	if in == nil {
		return
	}
	p.walAcks = append(p.walAcks, walAck{seq: seq, bucket: latencyBucket(p.cfg.Now().Sub(time.UnixMilli(in.Event)))})
	if len(p.walAcks) >= walAckBatch {
		p.flushWALAcks()
	}
}

// walFailed makes a record its client gave up on doubtful: a request
// that timed out may still have been written, so it is looked for in
// the brokers like the records of a process that died.
func (p *Publisher) walFailed(seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.walDoubt[seq] = p.cfg.Now()
}

// walCount counts directly (Count, NoTime, Malformed on a WAL publisher):
// written first, then counted. Called with mu held.
func (p *Publisher) walCount(kind byte, topic string, window time.Time, server string, eventTime time.Time, n int64) {
	in := &walIntent{Sent: p.cfg.Now().UnixMilli(), Kind: kind, Topic: topic, Window: window.UnixMilli(), Server: server, Event: eventTime.UnixMilli(), N: n}
	if err := p.wal.append(recCount, in.encode(nil)); err != nil {
		p.log.Error("audit: a count was not written to the WAL and is not counted", "topic", topic, "err", err)
		return
	}
	p.pending.addIntent(in, latencyBucket(time.Duration(in.Sent-in.Event)*time.Millisecond))
}

// flushWALAcks writes the buffered acknowledgements and drops, then
// counts them. Called with mu held.
func (p *Publisher) flushWALAcks() {
	st := p.wal.st
	if len(p.walAcks) > 0 && len(p.walDoubt) > 0 {
		// A doubtful record identical to one acknowledged is that
		// record sent again (the mirror resends what its target
		// refused): the brokers hold one copy, counted once.
		doubt := map[[16]byte][]uint64{}
		for seq := range p.walDoubt {
			if in := st.Intents[seq]; in != nil {
				doubt[in.Hash] = append(doubt[in.Hash], seq)
			}
		}
		for _, a := range p.walAcks {
			if in := st.Intents[a.seq]; in != nil {
				for _, seq := range doubt[in.Hash] {
					if _, ok := p.walDoubt[seq]; ok {
						delete(p.walDoubt, seq)
						p.walDrops = append(p.walDrops, seq)
					}
				}
			}
		}
	}
	if len(p.walAcks) > 0 {
		if err := p.wal.append(recAcks, encodeAcks(nil, p.walAcks)); err != nil {
			p.log.Error("audit: acknowledgements not written to the WAL", "err", err)
			return
		}
		for _, a := range p.walAcks {
			p.pending.addIntent(st.Intents[a.seq], a.bucket)
			delete(st.Intents, a.seq)
			delete(p.walDoubt, a.seq)
		}
		p.walAcks = p.walAcks[:0]
	}
	if len(p.walDrops) > 0 {
		if err := p.wal.append(recDrops, encodeSeqs(nil, p.walDrops)); err != nil {
			return
		}
		for _, seq := range p.walDrops {
			delete(st.Intents, seq)
			delete(p.walDoubt, seq)
		}
		p.walDrops = p.walDrops[:0]
	}
}

// walBuild builds monitoring events as build does, and writes them to
// the WAL (fsynced) before anything sends them; if the WAL cannot take
// them, nothing is built. Called with mu held.
func (p *Publisher) walBuild(all, final bool) {
	p.flushWALAcks()
	before := len(p.outbox)
	saved := struct {
		pending *Counts
		seq     int64
		prev    []Prior
		beat    time.Time
	}{p.pending.Clone(), p.seq, slices.Clone(p.prev), p.beat}
	p.build(all, final)
	if len(p.outbox) == before {
		return
	}
	rec, err := json.Marshal(walBuiltRecord{Beat: p.beat, Events: p.outbox[before:]})
	if err == nil {
		err = p.wal.append(recBuilt, rec)
	}
	if err == nil {
		err = p.wal.sync()
	}
	if err != nil {
		p.log.Error("audit: monitoring events not written to the WAL, so not sent", "err", err)
		*p.pending = *saved.pending
		p.seq, p.prev, p.beat, p.outbox = saved.seq, saved.prev, saved.beat, p.outbox[:before]
		return
	}
	p.walRotate()
}

// walPublished records that events were acknowledged. Called with mu
// held.
func (p *Publisher) walPublished(acked map[*Event]bool) {
	seqs := make([]int64, 0, len(acked))
	for e := range acked {
		seqs = append(seqs, e.Sequence)
	}
	slices.Sort(seqs)
	if err := p.wal.append(recPublished, encodeSeqs(nil, seqs)); err == nil {
		p.walRotate()
	}
}

// walRotate replaces a WAL file grown past walRotateBytes by a
// checkpoint of the state. Called with mu held.
func (p *Publisher) walRotate() {
	if p.wal.size < walRotateBytes {
		return
	}
	st := p.wal.st
	st.Seq, st.Prev, st.Beat, st.Pending, st.Outbox = p.seq, p.prev, p.beat, p.pending, p.outbox
	if err := p.wal.rotate(); err != nil {
		p.log.Warn("audit: the WAL file could not be replaced by a checkpoint; it keeps growing", "err", err)
	}
}

// Doubtful returns how many records sent through a WAL publisher are
// neither counted nor given up: sent by a process that died before their
// acknowledgement was written, or given up by their client.
func (p *Publisher) Doubtful() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.walDoubt)
}

// resolveDoubtful looks for the doubtful records in the brokers through
// find: those found are counted; those not found by a search that began
// walSettle after they became doubtful are given up.
func (p *Publisher) resolveDoubtful(ctx context.Context, find func(context.Context, []*walIntent) (map[uint64]bool, error)) (found, dropped int, err error) {
	if err := p.resolveMu.lock(ctx); err != nil {
		return 0, 0, err
	}
	defer p.resolveMu.unlock()
	p.mu.Lock()
	var ins []*walIntent
	for seq := range p.walDoubt {
		if in := p.wal.st.Intents[seq]; in != nil {
			ins = append(ins, in)
		}
	}
	p.mu.Unlock()
	if len(ins) == 0 {
		return 0, 0, nil
	}
	began := p.cfg.Now()
	got, err := find(ctx, ins)
	if err != nil {
		return 0, 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A record found that is identical to one in flight may be that one
	// (sent again): it waits for the other's outcome.
	live := map[[16]byte]bool{}
	for seq, in := range p.wal.st.Intents {
		if _, doubtful := p.walDoubt[seq]; !doubtful {
			live[in.Hash] = true
		}
	}
	for _, in := range ins {
		since, ok := p.walDoubt[in.Seq]
		switch {
		case !ok, live[in.Hash]:
		case got[in.Seq]:
			delete(p.walDoubt, in.Seq)
			p.walAcks = append(p.walAcks, walAck{seq: in.Seq, bucket: latencyBucket(time.Duration(in.Sent-in.Event) * time.Millisecond)})
			found++
		case began.Sub(since) >= walSettle:
			delete(p.walDoubt, in.Seq)
			p.walDrops = append(p.walDrops, in.Seq)
			dropped++
		}
	}
	p.flushWALAcks()
	return found, dropped, nil
}

// resolve looks for doubtful records, if a Producer said how, and logs
// what it found. A failure is retried at the next publish.
func (p *Publisher) resolve(ctx context.Context) {
	p.mu.Lock()
	find, n := p.walFind, len(p.walDoubt)
	p.mu.Unlock()
	if find == nil || n == 0 {
		return
	}
	found, dropped, err := p.resolveDoubtful(ctx, find)
	if err != nil {
		p.log.Warn("audit: could not look for records whose acknowledgement was not written; trying again at the next publish", "records", n, "err", err)
		return
	}
	p.log.Info("audit: looked for records whose acknowledgement was not written", "records", n, "found_and_counted", found, "given_up", dropped)
}

// closeWAL writes what is buffered and closes the WAL.
func (p *Publisher) closeWAL() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushWALAcks()
	if err := p.wal.Close(); err != nil {
		p.log.Warn("audit: closing the WAL", "err", err)
	}
}

// Logged reports whether the publisher counts through a WAL (Intend,
// Sent).
func (p *Publisher) Logged() bool { return p.wal != nil }
