// Package txn is the transaction coordinator (KIP-98, KIP-447): it maps a
// transactional id to a producer id and epoch, runs each transaction's
// state machine (Empty → Ongoing → PrepareCommit/PrepareAbort →
// CompleteCommit/CompleteAbort) and ends transactions by writing markers
// into every partition they touched.
//
// What a caller may rely on:
//   - Every state change is durable in __transaction_state (Kafka's key and
//     value layout, one compacted record per id) before it is answered, so
//     a restarted coordinator resumes where the last one stopped: a
//     prepared transaction is completed (markers written again, which
//     partitions accept), an open one stays open until its producer ends
//     it, is fenced, or times out.
//   - A commit decided (PrepareCommit written) is carried out: its markers
//     and its consumer offsets are written, retried until they are. An
//     open transaction is aborted, never committed, when it times out or a
//     new instance of its producer calls InitProducerId (which also bumps
//     the epoch, so the old instance is fenced everywhere).
//   - Offsets sent with TxnOffsetCommit are kept in the transaction's state
//     and reach the group only with the commit.
//
// The package knows nothing of sockets or logs: the broker gives it a
// Backend that stores its records, writes markers and commits offsets.
package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Record is one record of __transaction_state; a nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Backend is what the coordinator needs from its broker.
type Backend interface {
	// AppendState writes records to partition p of __transaction_state
	// if this broker leads it in leader epoch epoch, the one its state
	// was read in, and returns once they are durable.
	AppendState(ctx context.Context, p int32, epoch int32, recs []Record) error
	// ReadState returns every record of partition p, oldest first.
	ReadState(ctx context.Context, p int32) ([]Record, error)
	// WriteMarkers ends producerID's transaction in each partition (a
	// commit or abort marker at epoch, from coordinator epoch coordEpoch,
	// which partitions use to refuse a stale coordinator's markers) and
	// returns once they are durable. Partitions that no longer exist are
	// skipped without error. On an error, failed names the partitions
	// whose markers may not be written (nil: all of them), so a retry
	// writes only those and the others get no duplicate marker.
	WriteMarkers(ctx context.Context, producerID int64, epoch int16, commit bool, coordEpoch int32, parts []TP) (failed []TP, err error)
	// CommitOffsets makes a committed transaction's offsets the group's.
	CommitOffsets(ctx context.Context, group string, offsets map[TP]Offset) error
	// NewProducerID hands out a producer id never handed out before.
	NewProducerID() (int64, error)
	// StateEpoch is the leader epoch in which this broker leads state
	// partition p, or an error when it does not lead it: the state read
	// in another epoch may have been changed by another coordinator since.
	StateEpoch(ctx context.Context, p int32) (int32, error)
}

// Config sizes the coordinator; zero values take Kafka's defaults.
type Config struct {
	// Partitions of __transaction_state (transaction.state.log.num.partitions).
	Partitions int32
	// MaxTimeout bounds the timeout a producer may ask for
	// (transaction.max.timeout.ms). Default 15 minutes.
	MaxTimeout time.Duration
	// IDExpiration forgets a transactional id idle this long with no open
	// transaction (transactional.id.expiration.ms). Default 7 days.
	IDExpiration time.Duration
	// CheckInterval is how often timeouts and unfinished completions are
	// looked at. Default 1 second.
	CheckInterval time.Duration
	Clock         func() time.Time
	Logger        *slog.Logger
}

// Coordinator coordinates the transactions of every id whose state
// partition this broker holds.
type Coordinator struct {
	cfg Config
	be  Backend
	log *slog.Logger

	mu      sync.Mutex
	loaded  map[int32]int32 // state partition → leader epoch it was read in
	loading map[int32]*sync.Mutex
	txns    map[string]*entry
	loads   LoadStats // guarded by mu

	stop chan struct{}
	wg   sync.WaitGroup
}

// entry pairs an id's state with the lock its operations hold, I/O
// included, so that operations on one id run one at a time while other
// ids proceed.
type entry struct {
	mu sync.Mutex
	m  *meta // nil once the id is forgotten
}

// New starts a coordinator; Close stops its background checks.
func New(be Backend, cfg Config) *Coordinator {
	if cfg.Partitions <= 0 {
		cfg.Partitions = 50
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = 15 * time.Minute
	}
	if cfg.IDExpiration <= 0 {
		cfg.IDExpiration = 7 * 24 * time.Hour
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Coordinator{cfg: cfg, be: be, log: cfg.Logger, loaded: map[int32]int32{}, txns: map[string]*entry{}, stop: make(chan struct{})}
	c.wg.Add(1)
	go c.checkLoop()
	return c
}

// Close stops the background checks.
func (c *Coordinator) Close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.wg.Wait()
}

// Partitions is the number of __transaction_state partitions.
func (c *Coordinator) Partitions() int32 { return c.cfg.Partitions }

// load reads partition p's state once per leader epoch: a coordinator
// that lost the partition and got it back reads what the others wrote.
func (c *Coordinator) load(ctx context.Context, p int32) error {
	epoch, err := c.be.StateEpoch(ctx, p)
	if err != nil {
		return err
	}
	// One load of p at a time, outside mu: the ids of other partitions
	// go on while p's state is read (a large partition takes seconds).
	// Until the new entries are swapped in, p's old ones stay, and every
	// write from them is refused (write checks the epoch).
	lm := c.loadLock(p)
	lm.Lock()
	defer lm.Unlock()
	c.mu.Lock()
	e, ok := c.loaded[p]
	c.mu.Unlock()
	if ok && e == epoch {
		return nil
	}
	began := time.Now()
	recs, err := c.be.ReadState(ctx, p)
	if err != nil {
		return fmt.Errorf("loading transaction state partition %d: %w", p, err)
	}
	latest := map[string]*meta{}
	for _, r := range recs {
		id, m, err := decodeRecord(r.Key, r.Value)
		if err != nil {
			// Skipping a record would resurrect an older state of its id;
			// the id's next record (if any) supersedes it anyway.
			c.log.Warn("skipping an unreadable transaction state record", "partition", p, "err", err)
			continue
		}
		latest[id] = m
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.txns {
		if PartitionFor(id, c.cfg.Partitions) == p {
			delete(c.txns, id) // an operation holding its entry finds it gone (lookup)
		}
	}
	for id, m := range latest {
		if m == nil || m.state == Dead {
			continue
		}
		if PartitionFor(id, c.cfg.Partitions) != p {
			continue
		}
		c.txns[id] = &entry{m: m}
	}
	c.loaded[p] = epoch
	took := time.Since(began)
	c.loads.Loads++
	c.loads.Records += int64(len(recs))
	c.loads.Time += took
	c.log.Info("loaded transaction state", "partition", p, "leader_epoch", epoch, "records", len(recs), "transactional_ids", len(latest), "took", took)
	return nil
}

// loadLock is the mutex one load of state partition p at a time holds.
func (c *Coordinator) loadLock(p int32) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loading == nil {
		c.loading = map[int32]*sync.Mutex{}
	}
	if c.loading[p] == nil {
		c.loading[p] = &sync.Mutex{}
	}
	return c.loading[p]
}

// lookup returns id's entry, locked, loading its partition first; create
// makes an empty entry for an unknown id (m nil).
func (c *Coordinator) lookup(ctx context.Context, id string, create bool) (*entry, error) {
	if err := c.load(ctx, PartitionFor(id, c.cfg.Partitions)); err != nil {
		return nil, err
	}
	for {
		c.mu.Lock()
		e := c.txns[id]
		if e == nil {
			if !create {
				c.mu.Unlock()
				return nil, nil
			}
			e = &entry{}
			c.txns[id] = e
		}
		c.mu.Unlock()
		e.mu.Lock()
		c.mu.Lock()
		current := c.txns[id] == e
		c.mu.Unlock()
		if current {
			return e, nil
		}
		e.mu.Unlock() // forgotten meanwhile: look again
	}
}

// persist writes m's state; on failure the in-memory state is the
// caller's to roll back (it answers the client with an error).
func (c *Coordinator) persist(ctx context.Context, m *meta) error {
	m.lastUpdate = c.cfg.Clock()
	rec := Record{Key: encodeKey(m.id), Value: m.encodeValue()}
	if err := c.write(ctx, m.id, rec); err != nil {
		c.log.Error("writing transaction state", "transactional_id", m.id, "state", m.state.String(), "err", err)
		return err
	}
	return nil
}

// write appends id's record to its state partition in the leader epoch
// the partition was read in, and only then: a coordinator that lost the
// partition and got it back in a later epoch remembers transactions that
// another coordinator has since ended, and a record written from that
// memory (a timeout's abort, a tombstone) would become the id's state at
// the next read.
func (c *Coordinator) write(ctx context.Context, id string, rec Record) error {
	epoch, err := c.coordinatorEpoch(ctx, id)
	if err != nil {
		return err
	}
	return c.be.AppendState(ctx, PartitionFor(id, c.cfg.Partitions), epoch, []Record{rec})
}

func clone(m *meta) meta { return *m }

// InitProducerID gives id's producer its producer id and a new epoch,
// first finishing what the previous epoch left: a decided transaction is
// completed, an open one is aborted (fencing the old instance).
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, producerID int64, epoch int16) (int64, int16, *kerr.Error) {
	if id == "" {
		return -1, -1, kerr.InvalidRequest
	}
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		return -1, -1, kerr.InvalidTransactionTimeout
	}
	e, err := c.lookup(ctx, id, true)
	if err != nil {
		return -1, -1, kerr.CoordinatorLoadInProgress
	}
	defer e.mu.Unlock()
	m := e.m
	if m == nil {
		pid, err := c.be.NewProducerID()
		if err != nil {
			return -1, -1, kerr.KafkaStorageError
		}
		m = &meta{id: id, producerID: pid, epoch: 0, prevEpoch: -1, timeoutMs: timeoutMs, state: Empty}
		if err := c.persist(ctx, m); err != nil {
			return -1, -1, kerr.CoordinatorNotAvailable
		}
		e.m = m
		return m.producerID, m.epoch, nil
	}
	if producerID >= 0 && epoch >= 0 {
		// KIP-360: a producer recovering from an error names itself.
		if producerID != m.producerID {
			return -1, -1, kerr.InvalidProducerIDMapping
		}
		if epoch != m.epoch && (epoch != m.prevEpoch || m.prevEpoch < 0) {
			return -1, -1, kerr.ProducerFenced
		}
	}
	switch m.state {
	case PrepareCommit, PrepareAbort:
		if err := c.complete(ctx, m); err != nil {
			return -1, -1, kerr.ConcurrentTransactions
		}
	case Ongoing:
		if err := c.fenceAndAbort(ctx, m, "a new instance of the producer called InitProducerId"); err != nil {
			return -1, -1, kerr.ConcurrentTransactions
		}
	}
	next := clone(m)
	next.timeoutMs = timeoutMs
	next.state, next.start = Empty, time.Time{}
	next.resetTxn()
	if next.epoch >= math.MaxInt16-1 {
		pid, err := c.be.NewProducerID()
		if err != nil {
			return -1, -1, kerr.KafkaStorageError
		}
		next.producerID, next.epoch, next.prevEpoch = pid, 0, -1
	} else {
		next.prevEpoch = next.epoch
		next.epoch++
	}
	if err := c.persist(ctx, &next); err != nil {
		return -1, -1, kerr.CoordinatorNotAvailable
	}
	*m = next
	return m.producerID, m.epoch, nil
}

// check is the producer id and epoch rule of every request after
// InitProducerId: another id is INVALID_PRODUCER_ID_MAPPING, an older
// epoch is fenced.
func check(m *meta, producerID int64, epoch int16) *kerr.Error {
	switch {
	case m == nil || m.producerID != producerID:
		return kerr.InvalidProducerIDMapping
	case epoch < m.epoch:
		return kerr.ProducerFenced
	case epoch > m.epoch:
		return kerr.InvalidProducerEpoch
	}
	return nil
}

// begin makes the transaction Ongoing in next (a copy to persist).
func (c *Coordinator) begin(next *meta) *kerr.Error {
	switch next.state {
	case PrepareCommit, PrepareAbort:
		return kerr.ConcurrentTransactions
	case Dead:
		return kerr.InvalidTxnState
	case Empty, CompleteCommit, CompleteAbort:
		next.state, next.start = Ongoing, c.cfg.Clock()
		next.resetTxn()
	}
	return nil
}

// errNotCoordinator: the state partition moved on since it was read.
var errNotCoordinator = errors.New("this broker no longer coordinates the transactional id (its state partition moved)")

// coordinatorEpoch is the leader epoch id's state partition was read in,
// after checking this broker still leads it in that epoch: a coordinator
// that was paused while another took its partition over must not write
// markers from what it remembers. On a change the partition's state is
// dropped, to be read again by the next request.
func (c *Coordinator) coordinatorEpoch(ctx context.Context, id string) (int32, error) {
	p := PartitionFor(id, c.cfg.Partitions)
	now, err := c.be.StateEpoch(ctx, p)
	c.mu.Lock()
	defer c.mu.Unlock()
	loaded, ok := c.loaded[p]
	if err == nil && ok && now == loaded {
		return loaded, nil
	}
	delete(c.loaded, p)
	for other := range c.txns {
		if PartitionFor(other, c.cfg.Partitions) == p {
			delete(c.txns, other)
		}
	}
	if err == nil {
		err = errNotCoordinator
	}
	return 0, err
}
