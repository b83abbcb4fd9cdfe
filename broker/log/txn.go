package log

// Transactions in a partition (KIP-98): a transactional producer's batches
// carry the transactional bit; the transaction ends in this partition with
// a control batch, the marker, that commits or aborts it. The log keeps
//
//   - the open transactions: per producer id, the first offset of its open
//     transaction here. The smallest is the first unstable offset, and the
//     last stable offset (LSO) is the high watermark capped there: a
//     read_committed consumer reads up to it and no further, so it never
//     sees a record whose fate is not yet known;
//   - the aborted transactions, per segment, in NNN.txnindex (txnindex.go):
//     a read_committed consumer is told which producers' records in a
//     fetched range were aborted and drops them.
//
// Open transactions are part of the producer snapshot (format 2), and
// both they and the aborted index are rebuilt from the batch headers after
// the snapshot on every Open and truncation, as the idempotent producers'
// state is.

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// ErrCoordinatorFenced: a marker from a transaction coordinator older
// than one that already wrote a marker for the producer here (a paused
// coordinator whose state partition moved on; TRANSACTION_COORDINATOR_FENCED).
var ErrCoordinatorFenced = errors.New("transaction marker from a fenced coordinator")

// ErrControlBatch: a client sent a control batch; only the transaction
// coordinator's markers (AppendMarker) write them (INVALID_RECORD).
var ErrControlBatch = fmt.Errorf("%w: control batches are written by the transaction coordinator only", ErrInvalidRecord)

// AbortedTxn is one aborted transaction of a partition: the producer and
// the offsets of its first batch and of its abort marker. Read_committed
// consumers drop that producer's transactional records in between.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64 // the abort marker's offset
}

// openTxns maps a producer id to the first offset of its open transaction.
// first caches the smallest (-1: none), so the LSO costs nothing to read;
// shown is first as readers without the log's lock see it (every fetch
// reads it), except while a reload holds it (hold).
type openTxns struct {
	m     map[int64]int64
	first int64
	shown atomic.Int64
	held  bool
}

func (o *openTxns) reset() {
	o.m, o.first = nil, -1
	o.show(-1)
}

// hold shows readers floor, every offset from there unstable, until
// release: a reload (Open, a follower's truncation) rebuilds the open
// transactions one at a time from a snapshot and the log, and a fetch
// that read a half-built set would take an open transaction's records for
// decided. A broker that just lost a partition's leadership truncates it
// while answering fetches it accepted as the leader.
func (o *openTxns) hold(floor int64) {
	o.held = true
	o.shown.Store(floor)
}

// release shows readers the rebuilt first unstable offset.
func (o *openTxns) release() {
	o.held = false
	o.shown.Store(o.first)
}

func (o *openTxns) show(first int64) {
	if !o.held {
		o.shown.Store(first)
	}
}

func (o *openTxns) begin(pid, offset int64) {
	if _, ok := o.m[pid]; ok {
		return
	}
	if o.m == nil {
		o.m = map[int64]int64{}
	}
	o.m[pid] = offset
	if o.first < 0 || offset < o.first {
		o.first = offset
		o.show(offset)
	}
}

// end closes pid's transaction and returns its first offset, if open.
func (o *openTxns) end(pid int64) (int64, bool) {
	first, ok := o.m[pid]
	if !ok {
		return 0, false
	}
	delete(o.m, pid)
	if first == o.first {
		o.first = -1
		for _, f := range o.m {
			if o.first < 0 || f < o.first {
				o.first = f
			}
		}
		o.show(o.first)
	}
	return first, true
}

// txnWritten records a transactional batch (data or marker) just written
// at [base, last] in the active segment. Call with mu held.
func (l *Log) txnWritten(batch []byte, h *recordbatch.Header, base, last int64, now time.Time) error {
	if !h.Control() {
		l.producers.record(h, base, last, now)
		l.txns.begin(h.ProducerID, base)
		return nil
	}
	typ, coordEpoch, err := recordbatch.ControlRecord(batch)
	if err != nil {
		return err // validated before it was written: only a bug gets here
	}
	l.producers.marker(h, coordEpoch, now)
	first, ok := l.txns.end(h.ProducerID)
	if typ == recordbatch.ControlAbort && ok {
		return l.active.addAborted(AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: base}, l.dir)
	}
	return nil
}

// marker applies a transaction marker to a producer's state: a marker of
// a newer epoch (the coordinator fenced the producer) makes the older
// epoch's batches stale; the same epoch keeps its sequences, which go on
// across transactions. The coordinator epoch it carries is remembered
// whether the marker was written here, replicated from a leader or
// replayed at Open, so a follower that becomes leader, or a restarted
// broker, refuses an older coordinator's markers as the writer did.
func (p *producers) marker(h *recordbatch.Header, coordEpoch int32, now time.Time) {
	st := p.lookup(h.ProducerID)
	if st == nil {
		st = p.insert(h.ProducerID)
		st.epoch = h.ProducerEpoch
	} else {
		p.touch(p.index[h.ProducerID])
	}
	if h.ProducerEpoch > st.epoch {
		st.epoch, st.n, st.head = h.ProducerEpoch, 0, 0
	}
	st.markers++
	st.coordEpoch = max(st.coordEpoch, coordEpoch)
	st.lastSeen = now.UnixMilli()
}

// AppendMarker writes the marker ending producerID's transaction in this
// partition, committing or aborting it, and returns its offset. As in
// Kafka, a marker whose epoch is older than the producer's current one is
// refused, and so is one from a coordinator epoch older than that of a
// marker this log already wrote for the producer (ErrCoordinatorFenced: a
// coordinator that lost its place and would end the next transaction); a
// marker for a producer with no open transaction here is still written,
// as a retried marker is.
func (l *Log) AppendMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32) (int64, error) {
	now := l.cfg.Clock()
	b := recordbatch.MarkerBatch(producerID, epoch, commit, coordinatorEpoch, now.UnixMilli())
	h := recordbatch.ParseHeader(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if l.failed != nil {
		return 0, l.failed
	}
	st := l.producers.lookup(producerID)
	if st != nil && epoch < st.epoch {
		return 0, fmt.Errorf("%w: marker for producer %d at epoch %d, current epoch is %d",
			ErrInvalidProducerEpoch, producerID, epoch, st.epoch)
	}
	if st != nil && coordinatorEpoch < st.coordEpoch {
		return 0, fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, one from epoch %d was written",
			ErrCoordinatorFenced, producerID, coordinatorEpoch, st.coordEpoch)
	}
	base, _, err := l.write(b, &h, now, false)
	return base, err
}

// LastStableOffset is the offset below which every transaction is decided:
// the high watermark capped at the first offset of the oldest open
// transaction. Read_committed consumers read up to it.
func (l *Log) LastStableOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.txns.m) > 0 && l.txns.first < l.hw {
		return l.txns.first
	}
	return l.hw
}

// FirstUnstableOffset is the first offset of the oldest open transaction,
// or -1 when none is open; a fetch caps its high watermark with it. It
// takes no lock.
func (l *Log) FirstUnstableOffset() int64 {
	return l.txns.shown.Load()
}

// OpenTransaction is the first offset of producerID's open transaction
// here, if it has one (DescribeProducers).
func (l *Log) OpenTransaction(producerID int64) (int64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	first, ok := l.txns.m[producerID]
	return first, ok
}

// OpenTransactions is the number of transactions open in this partition.
func (l *Log) OpenTransactions() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.txns.m)
}

// AbortedTransactions lists the aborted transactions whose records may lie
// in [from, upTo): those aborted at or after from that began before upTo.
func (l *Log) AbortedTransactions(from, upTo int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []AbortedTxn
	for _, s := range l.segs {
		if s.next <= from {
			continue
		}
		for _, a := range s.aborted {
			if a.LastOffset >= from && a.FirstOffset < upTo {
				out = append(out, a)
			}
		}
	}
	return out
}

// txnReplay rebuilds the transactions of a stretch of the log from its
// batch headers (loadProducerState): the transactions open where it starts
// come from the producer snapshot, and each segment's aborted list is
// replaced from the first offset replayed on.
type txnReplay struct {
	from    int64
	aborted map[*segment][]AbortedTxn
}

// replayBatch applies one batch header (and, for a marker, its bytes) met
// in s. Call with mu held or before the log is shared.
func (l *Log) replayBatch(r *txnReplay, s *segment, h *recordbatch.Header, b []byte) error {
	if !h.Control() {
		l.txns.begin(h.ProducerID, h.BaseOffset)
		return nil
	}
	typ, err := recordbatch.ControlType(b)
	if err != nil {
		return fmt.Errorf("segment %s: marker at offset %d: %w", s.path, h.BaseOffset, err)
	}
	first, ok := l.txns.end(h.ProducerID)
	if typ == recordbatch.ControlAbort && ok {
		r.aborted[s] = append(r.aborted[s], AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset})
	}
	return nil
}

// finishReplay replaces, in every segment the replay covered, the aborted
// transactions from r.from on with those replayed, rewriting the index
// files that change. Entries past the log end (a truncation or a torn
// tail cut their markers) go too.
func (l *Log) finishReplay(r *txnReplay) error {
	leo := l.active.next
	var errs []error
	for _, s := range l.segs {
		if s.next <= r.from && !s.abortedPast(leo) {
			continue
		}
		kept := s.aborted[:0:0]
		for _, a := range s.aborted {
			if a.LastOffset < r.from && a.LastOffset < leo {
				kept = append(kept, a)
			}
		}
		kept = append(kept, r.aborted[s]...)
		if sameAborted(kept, s.aborted) {
			continue
		}
		if err := s.rewriteAborted(kept); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *segment) abortedPast(leo int64) bool {
	n := len(s.aborted)
	return n > 0 && s.aborted[n-1].LastOffset >= leo
}

func sameAborted(a, b []AbortedTxn) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// markerPeek is how much of a control batch the replay reads: a marker,
// header and one small record, is well under it.
const markerPeek = 256

// abortedSet is every aborted transaction of a log by producer, for the
// cleaner: a cleanable segment lies below the first unstable offset, so
// each transaction in it is decided, and an aborted one has its entry in
// the index of the segment holding its marker.
type abortedSet map[int64][]AbortedTxn

func (l *Log) abortedSetLocked() abortedSet {
	var set abortedSet
	for _, s := range l.segs {
		for _, a := range s.aborted {
			if set == nil {
				set = abortedSet{}
			}
			set[a.ProducerID] = append(set[a.ProducerID], a)
		}
	}
	return set
}

// aborted says whether the record at off of a batch with header h belongs
// to an aborted transaction.
func (set abortedSet) aborted(h *recordbatch.Header, off int64) bool {
	if !h.Transactional() || h.Control() {
		return false
	}
	for _, a := range set[h.ProducerID] {
		if a.FirstOffset <= off && off < a.LastOffset {
			return true
		}
	}
	return false
}
