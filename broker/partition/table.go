// Package partition is the partition table: the logs of the partitions
// this broker stores, each in <data dir>/<topic>-<partition>, opened on
// first use and kept within the process's descriptor limit.
//
// What a caller may rely on:
//   - Get returns the one open log of a partition, opening (and so
//     recovering) it first if needed; concurrent callers share one open, and
//     a long recovery holds up no other partition.
//   - The open logs together hold at most the descriptor budget (half the
//     process's limit by default, openfiles.go): the least recently used log
//     is parked (its descriptors given back, its state kept) and, past the
//     open-log cap, closed with the clean Close in the background. A caller
//     holding a log that is closed meanwhile sees log.ErrClosed and retries;
//     nothing written is lost, because Close flushes first.
//   - A topic deleted through DeleteTopic is not opened again by a request
//     that looked it up before the delete (ErrTopicDeleted), unless the
//     cluster view holds a topic of that name with a new id.
//   - Partitions not shut down cleanly are recovered by RecoverUnclean
//     before they are served; retention reaches the partitions that are not
//     open (SweepRetention).
//   - A partition that cannot write is logged once, with its free space,
//     and once again when it writes (StorageError, StorageWritten).
//
// The package knows nothing of replication or of Kafka requests: what the
// replication layer wants to see of a log's opening (its repair marker, a
// loss found in recovery) reaches it through Hooks. It imports broker/log,
// cluster and broker/kafkaerr only; nothing here imports the broker.
package partition

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/cluster"
)

// Table holds the open logs of the partitions this broker stores, each in
// <dir>/<topic>-<partition>.
//
// A log is opened (and so recovered) on first use, not at start, and the
// open logs together hold at most fdBudget file descriptors: opening or
// using one more parks the least recently used (CLOCK), which gives its
// descriptors back and stays open (park.go). Past maxOpen open
// logs the least recently used is closed with the clean Close, in the
// background (close.go), and the next request for it opens it
// again. So a broker hosting more partitions than it has descriptors for
// still starts and serves them all. A request that got a log just as it was
// being closed sees log.ErrClosed, which clients get as
// NOT_LEADER_FOR_PARTITION and retry; nothing is lost, because Close
// flushes first.
type Table struct {
	dir      string
	base     atomic.Pointer[log.Config] // of every partition, before its topic's configs (setBase)
	logger   *slog.Logger
	fdBudget int // descriptors the open logs may hold together; <= 0: no limit
	maxOpen  int // open logs, parked or not, when fdBudget > 0 (park.go)

	mu      sync.RWMutex // read-locked on every produce and fetch
	logs    map[Key]*openLog
	ring    []*openLog // the open (or opening) logs, in CLOCK order
	hand    int
	fds     int                   // descriptors held by the logs in ring, estimated
	closing map[Key]chan struct{} // logs being closed: wait before reopening
	// closingFDs are the descriptors still held by the logs in closing
	// (close.go); roomFreed is closed and replaced whenever one
	// of them finishes.
	closingFDs int
	roomFreed  chan struct{}

	cleaner *log.Cleaner // compacts the open logs whose cleanup policy says so

	// dead holds the topics deleted by this process (deleted.go);
	// current is the cluster view's lookup that tells a stale request's
	// topic from one created again under the same name.
	dead    tombstones
	current func(name string) (cluster.Topic, bool)
	hooks   Hooks
	faults  storageFaults // partitions failing writes, logged once each (faults.go)
}

// IsOpen reports whether t's partition p has an open (or opening) log:
// a follower's fetch round opens the others together first.
func (ps *Table) IsOpen(topic string, p int32) bool {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.logs[Key{topic, p}] != nil
}

// Key names a partition.
type Key struct {
	Topic     string
	Partition int32
}

// Hooks is what the replication layer sees of a log's opening, so that a
// damaged replicated partition can be fetched back from another replica.
type Hooks interface {
	// BeforeLoss is log.Config.BeforeLoss for t's partition p in dir (nil:
	// none).
	BeforeLoss(t cluster.Topic, p int32, dir string, fsys log.FS) func(first int64) error
	// Opened is called once the log of t's partition p is open.
	Opened(t cluster.Topic, p int32, l *log.Log)
}

// Config is what a Table is built from.
type Config struct {
	Dir  string     // the data directory
	Base log.Config // of every partition, before its topic's configs
	// FDBudget is the descriptors the open logs may hold together (<= 0:
	// no limit; FileBudget gives the default); MaxOpen the open logs,
	// parked or not (0: twice FDBudget).
	FDBudget, MaxOpen int
	Logger            *slog.Logger
	// Current looks a topic up in the cluster view, to tell a stale
	// request's topic from one created again under the same name (nil:
	// a deleted topic stays refused until its tombstone is dropped).
	Current func(name string) (cluster.Topic, bool)
	Hooks   Hooks // nil: none
}

// openLog is one partition's log, or its opening in progress.
type openLog struct {
	key    Key
	ready  chan struct{} // closed once l or err is set
	l      *log.Log
	err    error
	fds    int  // descriptors it holds: its segments plus two writers
	parked bool // its descriptors are given back (park.go); guarded by mu
	// retiredFDs are the descriptors counted in closingFDs while it closes.
	retiredFDs int
	used       atomic.Bool // CLOCK reference bit, set on every get
	pos        int         // index in ring; guarded by mu
	inRing     bool
}

// New returns an empty table; logs open as they are asked for.
func New(cfg Config) *Table {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ps := &Table{
		dir: cfg.Dir, logger: logger, fdBudget: cfg.FDBudget, maxOpen: maxOpenLogs(cfg.FDBudget),
		logs:      map[Key]*openLog{},
		closing:   map[Key]chan struct{}{},
		roomFreed: make(chan struct{}),
		cleaner:   log.NewCleaner(cfg.Base.Cleaner, logger),
		current:   cfg.Current,
		hooks:     cfg.Hooks,
	}
	if cfg.MaxOpen > 0 {
		ps.maxOpen = cfg.MaxOpen
	}
	ps.base.Store(&cfg.Base)
	return ps
}

// SetBase changes the configuration the logs opened from now on start
// from (dynamic broker configs); the open ones are reconfigured apart.
func (ps *Table) SetBase(base log.Config) { ps.base.Store(&base) }

// Dir is the directory of topic's partition p.
func (ps *Table) Dir(topic string, p int32) string {
	return filepath.Join(ps.dir, topic+"-"+strconv.Itoa(int(p)))
}

// Get returns the open log of t's partition p, opening (and recovering) it on
// first use with t's per-topic configuration.
func (ps *Table) Get(t cluster.Topic, p int32) (*log.Log, error) {
	return ps.open(t, p, true)
}

// OpenCold is Get for a caller that is not a client's request (a report,
// a sweep): a log it opens is the first in line to be closed again.
func (ps *Table) OpenCold(t cluster.Topic, p int32) (*log.Log, error) {
	return ps.open(t, p, false)
}

// open is get; a cold open (used=false) leaves the log first in line to be
// closed again, for the retention sweep and start-up recovery, which should
// not push out the logs clients use.
func (ps *Table) open(t cluster.Topic, p int32, used bool) (*log.Log, error) {
	key := Key{t.Name, p}
	ps.mu.RLock()
	o := ps.logs[key]
	parked := o != nil && o.parked
	ps.mu.RUnlock()
	if o == nil {
		o = ps.startOpen(t, key, used)
	} else if parked && used {
		ps.unpark(o)
	}
	<-o.ready
	if o.err != nil {
		return nil, o.err
	}
	if used && !o.used.Load() {
		o.used.Store(true)
	}
	return o.l, nil
}

// startOpen registers key as opening and opens it without holding mu, so a
// long recovery holds up no other partition; it returns the entry to wait
// on (another caller's, if one was first).
func (ps *Table) startOpen(t cluster.Topic, key Key, used bool) *openLog {
	ps.waitForClosingRoom()
	ps.mu.Lock()
	if o := ps.logs[key]; o != nil {
		ps.mu.Unlock()
		return o
	}
	if err := ps.refuseDeletedLocked(t); err != nil {
		ps.mu.Unlock()
		o := &openLog{key: key, ready: make(chan struct{}), err: fmt.Errorf("partition %s-%d: %w", key.Topic, key.Partition, err)}
		close(o.ready)
		return o
	}
	o := &openLog{key: key, ready: make(chan struct{}), fds: 3}
	o.used.Store(used)
	ps.logs[key] = o
	victims := ps.makeRoomLocked(o.fds, 1)
	ps.addLocked(o)
	wait := ps.closing[key]
	ps.mu.Unlock()

	ps.evict(victims)
	if wait != nil {
		<-wait // the previous instance must finish its Close first
	}
	o.l, o.fds, o.err = ps.openLog(t, key)
	ps.mu.Lock()
	if o.err != nil {
		ps.removeLocked(o)
		if ps.logs[key] == o {
			delete(ps.logs, key)
		}
	} else if o.inRing {
		ps.fds += o.fds - 3
	}
	ps.mu.Unlock()
	close(o.ready)
	return o
}

func (ps *Table) openLog(t cluster.Topic, key Key) (*log.Log, int, error) {
	cfg, err := topicconfig.LogConfig(*ps.base.Load(), t.Configs)
	if err != nil {
		return nil, 0, fmt.Errorf("topic %s: %w", t.Name, err)
	}
	dir := ps.Dir(key.Topic, key.Partition)
	if ps.hooks != nil {
		cfg.BeforeLoss = ps.hooks.BeforeLoss(t, key.Partition, dir, cfg.FS)
	}
	l, rep, err := log.Open(dir, cfg, ps.logger.With("topic", key.Topic, "partition", key.Partition))
	if err != nil {
		return nil, 0, fmt.Errorf("opening partition %s-%d: %w", key.Topic, key.Partition, err)
	}
	if ps.hooks != nil {
		ps.hooks.Opened(t, key.Partition, l)
	}
	if !rep.Clean && rep.TruncatedBytes > 0 {
		ps.logger.Warn("partition recovered with data cut from its tail",
			"topic", key.Topic, "partition", key.Partition, "truncated_bytes", rep.TruncatedBytes,
			"truncated_at_offset", rep.TruncatedAt, "reason", rep.Reason)
	}
	// A log closed later (idle, or the topic deleted) leaves the cleaner
	// by itself; reopened, it is added again.
	ps.cleaner.Add(l)
	return l, segmentFiles(dir) + 2, nil
}

// segmentFiles counts the segment files in a partition directory: an open
// log keeps one descriptor on each, and two more (data and index writers)
// on its active segment.
func segmentFiles(dir string) int {
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			n++
		}
	}
	return max(n, 1)
}

// makeRoomLocked parks logs, least recently used first, until want more
// descriptors fit the budget, and takes logs out of the ring until
// wantLogs more fit maxOpen; the caller parks and closes them (evict)
// after releasing mu. Logs still opening are skipped.
func (ps *Table) makeRoomLocked(want, wantLogs int) eviction {
	var ev eviction
	if ps.fdBudget <= 0 {
		return ev
	}
	over := func() bool { return ps.fds+want > ps.fdBudget || len(ps.ring)+wantLogs > ps.maxOpen }
	for scanned := 0; over() && len(ps.ring) > 0 && scanned < 3*len(ps.ring); scanned++ {
		ps.hand %= len(ps.ring)
		o := ps.ring[ps.hand]
		select {
		case <-o.ready:
		default:
			ps.hand++
			continue
		}
		if o.used.Load() {
			o.used.Store(false)
			ps.hand++
			continue
		}
		if len(ps.ring)+wantLogs > ps.maxOpen {
			ps.retireLocked(o) // the last of the ring takes its place under the hand
			ev.close = append(ev.close, o)
			continue
		}
		if !o.parked {
			ps.parkLocked(o)
			ev.park = append(ev.park, o)
		}
		ps.hand++
	}
	return ev
}

func (ps *Table) addLocked(o *openLog) {
	o.pos, o.inRing = len(ps.ring), true
	ps.ring = append(ps.ring, o)
	if !o.parked {
		ps.fds += o.fds
	}
}

func (ps *Table) removeLocked(o *openLog) {
	if !o.inRing {
		return
	}
	last := ps.ring[len(ps.ring)-1]
	ps.ring[o.pos], last.pos = last, o.pos
	ps.ring = ps.ring[:len(ps.ring)-1]
	o.inRing = false
	if !o.parked {
		ps.fds -= o.fds
	}
}

// closeIfUnused closes the log of key if nothing used it since it was
// opened cold: the retention sweep's way of giving its descriptors back.
func (ps *Table) closeIfUnused(key Key) {
	ps.mu.Lock()
	o := ps.logs[key]
	if o == nil || o.used.Load() || o.err != nil {
		ps.mu.Unlock()
		return
	}
	ps.retireLocked(o)
	ps.mu.Unlock()
	ps.closeLogs([]*openLog{o})
}
