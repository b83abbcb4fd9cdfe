package mirror

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/producer"
)

// Transactions close the windows that resuming from the target leaves open
// on its own. Each source partition has its own transactional producer
// in the target, whose transactional id (txnID) names the mirror's group,
// the source cluster, topic and partition: the same id in every process
// that ever owns the partition. Before a new owner reads the target's tail
// it initializes that producer (InitProducerId), which bumps the id's
// epoch: the target's coordinator aborts whatever transaction an earlier
// owner left open and completes one it was committing, and the partition
// leaders refuse the earlier owner's requests from then on, whether it is
// a dead process's produce request that lands late or a process paused
// past its session that wakes up and writes. The tail is then read at
// read_committed, up to the last stable offset: all an earlier owner
// committed is there, and nothing it did not commit will ever appear. So
// no record is copied twice and none is skipped.
//
// Batching: a partition's transaction begins with its first record and
// commits Config.TransactionInterval later (1 s by default), whatever
// came in between, so that a busy partition commits about once a
// second and an idle one not at all. Copies become visible to
// read_committed readers at the commit: the interval is the latency
// transactions add. The commit runs on the partition's own goroutine
// (write), so one partition's commit does not hold up the others, and
// the fetched records of a partition wait in its queue meanwhile.
//
// Why one producer per source partition and not one per process: fencing
// works per transactional id, and only an id that follows the partition
// from owner to owner lets the new owner fence the old one. The cost is a
// client (and its connections) per partition owned.

// txnID is the transactional id of one source partition's copy.
func txnID(group, source, topic string, p int32) string {
	return "tributary-mirror/" + group + "/" + source + "/" + topic + "/" + strconv.Itoa(int(p))
}

// batch is one fetch's records of a partition, handed to its writer.
type batch struct {
	records  []*kgo.Record
	logStart int64
}

// writer is the transactional producer of one source partition and the
// queue of records waiting for it. Only the partition's write goroutine
// produces and commits; the produce callbacks add to acked.
type writer struct {
	id   string
	in   chan batch
	kick chan struct{} // look at the partition now: released, or a record failed
	quit chan struct{} // the mirror stops: commit what is open, then exit
	done chan struct{} // closed when the goroutine exits
	stop sync.Once

	final context.Context // bounds the last commit; set before quit is closed

	mu     sync.Mutex
	cl     *kgo.Client // nil between a failure and the partition's restart
	open   bool        // a transaction is open
	began  time.Time
	n      int64       // records produced in the open transaction
	acked  []ackedCopy // of those, the ones the target acknowledged
	broken error       // a record of the open transaction failed: it can only abort
}

// ackedCopy is a copy acknowledged inside the open transaction: it counts
// as copied once the transaction commits.
type ackedCopy struct {
	seq uint64
	rec *kgo.Record
}

// newWriter makes the writer of a source partition and its client, and
// initializes the client's producer id: the step that fences every earlier
// owner of the partition and completes (aborts, or finishes committing)
// the transaction it left. It retries while the target cannot be reached.
func (s *source) newWriter(ctx context.Context, topic string, p int32) (*writer, error) {
	w := &writer{
		id:   txnID(s.cfg.Group, s.Name, topic, p),
		in:   make(chan batch, 4),
		kick: make(chan struct{}, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	if err := s.initWriter(ctx, w); err != nil {
		return nil, err
	}
	return w, nil
}

// initWriter gives w a new client with its producer id initialized.
func (s *source) initWriter(ctx context.Context, w *writer) error {
	cl, err := retry(ctx, s.log, s.events.failures.WithLabelValues("target"), "initializing the transactional producer "+w.id, func() (*kgo.Client, error) {
		opts, err := producer.Options(producer.Config{
			Acks:   producer.AcksAll,
			Logger: s.cfg.Logger,
			ClientOptions: append([]kgo.Opt{
				kgo.SeedBrokers(s.cfg.Target...),
				kgo.ClientID("tributary-mirror"), // see newTarget
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.UnknownTopicRetries(-1),
				// Per partition: the fetched records wait in the
				// writer's queue, this bounds what waits in the client.
				kgo.MaxBufferedBytes(16 << 20),
				kgo.TransactionalID(w.id),
				kgo.TransactionTimeout(s.cfg.TransactionTimeout),
				// kgo retries adding partitions to a transaction at once,
				// without a pause, while a broker refuses connections
				// (about 10,000 times a second, each logged). Bounded, the
				// records fail, the transaction aborts, and the partition
				// waits for the target in initWriter's backed-off retries.
				kgo.RecordRetries(20),
			}, s.cfg.ProducerOptions...),
		})
		if err != nil {
			return nil, &fatalError{err}
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, &fatalError{fmt.Errorf("target: transactional client: %w", err)}
		}
		if _, _, err := cl.ProducerID(ctx); err != nil {
			cl.Close()
			if refusesTransactions(err) {
				return nil, &fatalError{fmt.Errorf("the target refused the mirror's transactional producer %s: %w. "+
					"Grant the mirror's principal Write and Describe on transactional ids with the prefix tributary-mirror/, "+
					"or, for a target that cannot do transactions, run with --transactions=false (each record is then copied once "+
					"except in the windows the README names, where what was in flight can be copied twice)", w.id, err)}
			}
			return nil, err
		}
		return cl, nil
	})
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.cl = cl
	w.mu.Unlock()
	return nil
}

// refusesTransactions tells the errors no retry gets past: the target
// does not do transactions, or not for this principal.
func refusesTransactions(err error) bool {
	for _, e := range []error{kerr.TransactionalIDAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.UnsupportedVersion, kerr.UnsupportedForMessageFormat, kerr.InvalidRequest} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// fenced tells an error that means another process owns the partition's
// transactional id now.
func fenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}

// drop closes the writer's client, if it still has one, before a new one
// is made. Nothing is open: the partition failed and its transaction ended.
func (w *writer) drop() {
	w.mu.Lock()
	cl := w.cl
	w.cl = nil
	w.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}

// client returns the writer's client, nil after a failure.
func (w *writer) client() *kgo.Client {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cl
}

// handOver queues a fetch's records for the partition's writer. It blocks
// while the queue is full (back-pressure on the fetching) and gives up
// when the writer has exited (the partition was released).
func (s *source) handOver(ctx context.Context, part *partition, b batch) {
	part.queued.Add(1)
	select {
	case part.w.in <- b:
	case <-part.w.done:
		part.queued.Add(-1)
	case <-ctx.Done():
		part.queued.Add(-1)
	}
}

// poke asks the writer to look at its partition now.
func (w *writer) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// write is the goroutine of one source partition's writer: it copies the
// partition's records in its transactions until the partition is released
// or the mirror stops. Copies are produced under ctx, the mirror's run, so
// that they stop with it; commits run under the source's commitCtx, which
// outlives the run by the shutdown timeout, so that a commit the target
// completed is not taken for failed because the mirror began to stop.
func (s *source) write(ctx context.Context, part *partition) {
	w := part.w
	defer close(w.done)
	defer func() {
		s.mu.Lock()
		delete(s.writers, w)
		s.mu.Unlock()
		if cl := w.client(); cl != nil {
			cl.Close()
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case b := <-w.in:
			for _, r := range b.records {
				if ctx.Err() != nil {
					break // the mirror stops: not copied, found missing by the next run
				}
				s.copyPartition(ctx, part, r, b.logStart)
			}
			part.queued.Add(-1)
		case <-timer.C:
		case <-w.kick:
		case <-w.quit:
			s.endTransaction(w.final, part)
			return
		}
		part.mu.Lock()
		failed, released := part.failed != nil, part.revoked
		part.mu.Unlock()
		w.mu.Lock()
		open, began := w.open, w.began
		w.mu.Unlock()
		switch {
		case failed:
			s.abort(s.commitCtx, part)
		case released:
			s.endTransaction(s.commitCtx, part)
			return
		case open && time.Since(began) >= s.cfg.TransactionInterval:
			s.endTransaction(s.commitCtx, part)
		case open:
			timer.Reset(time.Until(began.Add(s.cfg.TransactionInterval)))
		}
	}
}

// produceTxn produces one copy in the partition's open transaction,
// beginning one if none is open. It returns false when the partition's
// producer is gone (a failure not yet restarted).
func (s *source) produceTxn(ctx context.Context, part *partition, out *kgo.Record, promise func(*kgo.Record, error)) bool {
	w := part.w
	w.mu.Lock()
	cl := w.cl
	if cl == nil {
		w.mu.Unlock()
		return false
	}
	if !w.open {
		if err := cl.BeginTransaction(); err != nil {
			w.mu.Unlock()
			s.markFailed(part, -1, fmt.Errorf("source %s: %s/%d: beginning a transaction in the target: %w", s.Name, part.topic, part.partition, err))
			return false
		}
		w.open, w.began = true, time.Now()
	}
	w.n++
	w.mu.Unlock()
	part.inflight.Add(1)
	cl.Produce(ctx, out, promise)
	return true
}

// ackedTxn is the produce callback's part under transactions: an
// acknowledged copy waits for its transaction's commit to count, a failed
// one dooms the transaction.
func (w *writer) ackedTxn(seq uint64, rec *kgo.Record, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if w.broken == nil {
			w.broken = err
		}
		return
	}
	w.acked = append(w.acked, ackedCopy{seq, rec})
}

// endTransaction commits the open transaction, once the target has
// acknowledged all its records; if any failed, or the commit fails, it
// aborts instead and the partition resumes from the target (restartFailed).
func (s *source) endTransaction(ctx context.Context, part *partition) {
	w := part.w
	w.mu.Lock()
	cl, open := w.cl, w.open
	w.mu.Unlock()
	if cl == nil || !open {
		return
	}
	err := cl.Flush(ctx)
	w.mu.Lock()
	broken := w.broken
	w.mu.Unlock()
	part.mu.Lock()
	failed := part.failed
	part.mu.Unlock()
	switch {
	case err != nil:
	case broken != nil:
		err = broken
	case failed != nil:
		err = failed
	default:
		err = cl.EndTransaction(ctx, kgo.TryCommit)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.markFailed(part, -1, fmt.Errorf("source %s: %s/%d: committing the copies in the target: %w", s.Name, part.topic, part.partition, err))
		}
		s.abort(ctx, part)
		return
	}
	w.mu.Lock()
	acked, n := w.acked, w.n
	w.open, w.acked, w.n, w.broken = false, nil, 0, nil
	w.mu.Unlock()
	part.mu.Lock()
	for _, a := range acked {
		part.acks.ack(a.seq)
	}
	part.mu.Unlock()
	for _, a := range acked {
		part.copied.Add(1)
		part.bytes.Add(int64(len(a.rec.Key) + len(a.rec.Value)))
		if s.cfg.Auditor != nil {
			s.cfg.Auditor.Copied(s.Name, a.rec)
		}
	}
	if len(acked) > 0 {
		s.lastAck.Store(time.Now().UnixNano())
	}
	part.inflight.Add(-n)
}

// abort gives up the open transaction and the partition's client: the
// target aborts what it holds of it (now, or when the partition's next
// producer fences this one), the records count as not copied, and the
// partition resumes from what the target holds once restartFailed gives it
// a new client.
func (s *source) abort(ctx context.Context, part *partition) {
	w := part.w
	w.mu.Lock()
	cl := w.cl
	w.cl = nil
	acked, n := w.acked, w.n
	w.open, w.acked, w.n, w.broken = false, nil, 0, nil
	w.mu.Unlock()
	part.mu.Lock()
	lost := part.fenced
	part.mu.Unlock()
	if cl != nil {
		// Aborting now frees the target's read_committed readers, which
		// wait at an open transaction. Not when fenced: the partition is
		// another process's now, and its producer aborted this
		// transaction already.
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if !lost && cl.AbortBufferedRecords(actx) == nil {
			cl.EndTransaction(actx, kgo.TryAbort) //nolint:errcheck // otherwise the next producer's fencing aborts it
		}
		cancel()
		cl.Close()
	}
	if sa, ok := s.cfg.Auditor.(sendAuditor); ok {
		for _, a := range acked {
			sa.Failed(s.Name, a.rec)
		}
	}
	part.inflight.Add(-n)
}

// markFailed records the first failure of the partition's copy (the
// record at offset, -1 for a transaction's); restartFailed resumes it.
func (s *source) markFailed(part *partition, offset int64, err error) {
	part.mu.Lock()
	defer part.mu.Unlock()
	if part.failed != nil || part.revoked {
		return
	}
	if offset < 0 {
		offset = part.acks.safe
	}
	part.failed, part.failedAt, part.failedHi = err, offset, max(part.failedHi, offset)
	part.fenced = fenced(err)
}

// finish ends every writer of the source: their open transactions commit
// within ctx (abort past it), and their goroutines exit.
func (s *source) finish(ctx context.Context) {
	s.mu.Lock()
	ws := make([]*writer, 0, len(s.writers))
	for w := range s.writers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.stop.Do(func() {
			w.final = ctx
			close(w.quit)
		})
	}
	for _, w := range ws {
		select {
		case <-w.done:
		case <-ctx.Done():
			return
		}
	}
}
