package broker

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/cluster"
)

// partitions holds the open logs of the partitions this broker stores, each
// in DataDir/<topic>-<partition>.
//
// A log is opened (and so recovered) on first use, not at start, and the
// open logs together hold at most fdBudget file descriptors: opening or
// using one more parks the least recently used (CLOCK), which gives its
// descriptors back and stays open (partitions_park.go). Past maxOpen open
// logs the least recently used is closed with the clean Close, in the
// background (partitions_close.go), and the next request for it opens it
// again. So a broker hosting more partitions than it has descriptors for
// still starts and serves them all. A request that got a log just as it was
// being closed sees log.ErrClosed, which clients get as
// NOT_LEADER_FOR_PARTITION and retry; nothing is lost, because Close
// flushes first.
type partitions struct {
	dir      string
	base     atomic.Pointer[log.Config] // of every partition, before its topic's configs (setBase)
	logger   *slog.Logger
	fdBudget int // descriptors the open logs may hold together; <= 0: no limit
	maxOpen  int // open logs, parked or not, when fdBudget > 0 (partitions_park.go)

	mu      sync.RWMutex // read-locked on every produce and fetch
	logs    map[partKey]*openLog
	ring    []*openLog // the open (or opening) logs, in CLOCK order
	hand    int
	fds     int                       // descriptors held by the logs in ring, estimated
	closing map[partKey]chan struct{} // logs being closed: wait before reopening
	// closingFDs are the descriptors still held by the logs in closing
	// (partitions_close.go); roomFreed is closed and replaced whenever one
	// of them finishes.
	closingFDs int
	roomFreed  chan struct{}

	cleaner *log.Cleaner // compacts the open logs whose cleanup policy says so

	// dead holds the topics deleted by this process (partitions_deleted.go);
	// current is the cluster view's lookup that tells a stale request's
	// topic from one created again under the same name.
	dead    tombstones
	current func(name string) (cluster.Topic, bool)
	repair  repairState // damaged replicas fetching again (replica_repair.go)
}

type partKey struct {
	topic string
	p     int32
}

// openLog is one partition's log, or its opening in progress.
type openLog struct {
	key    partKey
	ready  chan struct{} // closed once l or err is set
	l      *log.Log
	err    error
	fds    int  // descriptors it holds: its segments plus two writers
	parked bool // its descriptors are given back (partitions_park.go); guarded by mu
	// retiredFDs are the descriptors counted in closingFDs while it closes.
	retiredFDs int
	used       atomic.Bool // CLOCK reference bit, set on every get
	pos        int         // index in ring; guarded by mu
	inRing     bool
}

func newPartitions(dir string, base log.Config, fdBudget int, logger *slog.Logger) *partitions {
	ps := &partitions{
		dir: dir, logger: logger, fdBudget: fdBudget, maxOpen: maxOpenLogs(fdBudget),
		logs:      map[partKey]*openLog{},
		closing:   map[partKey]chan struct{}{},
		roomFreed: make(chan struct{}),
		cleaner:   log.NewCleaner(base.Cleaner, logger),
	}
	ps.base.Store(&base)
	return ps
}

// setBase changes the configuration the logs opened from now on start
// from (dynamic broker configs); the open ones are reconfigured apart.
func (ps *partitions) setBase(base log.Config) { ps.base.Store(&base) }

func (ps *partitions) partitionDir(topic string, p int32) string {
	return filepath.Join(ps.dir, topic+"-"+strconv.Itoa(int(p)))
}

// get returns the open log of t's partition p, opening (and recovering) it on
// first use with t's per-topic configuration.
func (ps *partitions) get(t cluster.Topic, p int32) (*log.Log, error) {
	return ps.open(t, p, true)
}

// open is get; a cold open (used=false) leaves the log first in line to be
// closed again, for the retention sweep and start-up recovery, which should
// not push out the logs clients use.
func (ps *partitions) open(t cluster.Topic, p int32, used bool) (*log.Log, error) {
	key := partKey{t.Name, p}
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
func (ps *partitions) startOpen(t cluster.Topic, key partKey, used bool) *openLog {
	ps.waitForClosingRoom()
	ps.mu.Lock()
	if o := ps.logs[key]; o != nil {
		ps.mu.Unlock()
		return o
	}
	if err := ps.refuseDeletedLocked(t); err != nil {
		ps.mu.Unlock()
		o := &openLog{key: key, ready: make(chan struct{}), err: fmt.Errorf("partition %s-%d: %w", key.topic, key.p, err)}
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

func (ps *partitions) openLog(t cluster.Topic, key partKey) (*log.Log, int, error) {
	cfg, err := topicconfig.LogConfig(*ps.base.Load(), t.Configs)
	if err != nil {
		return nil, 0, fmt.Errorf("topic %s: %w", t.Name, err)
	}
	dir := ps.partitionDir(key.topic, key.p)
	cfg.BeforeLoss = ps.repair.beforeLoss(t, key, dir, cfg.FS)
	l, rep, err := log.Open(dir, cfg, ps.logger.With("topic", key.topic, "partition", key.p))
	if err != nil {
		return nil, 0, fmt.Errorf("opening partition %s-%d: %w", key.topic, key.p, err)
	}
	ps.repair.opened(t, key, l)
	if !rep.Clean && rep.TruncatedBytes > 0 {
		ps.logger.Warn("partition recovered with data cut from its tail",
			"topic", key.topic, "partition", key.p, "truncated_bytes", rep.TruncatedBytes,
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
func (ps *partitions) makeRoomLocked(want, wantLogs int) eviction {
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

func (ps *partitions) addLocked(o *openLog) {
	o.pos, o.inRing = len(ps.ring), true
	ps.ring = append(ps.ring, o)
	if !o.parked {
		ps.fds += o.fds
	}
}

func (ps *partitions) removeLocked(o *openLog) {
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
func (ps *partitions) closeIfUnused(key partKey) {
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

// isOpen reports whether key has an open (or opening) log.
func (ps *partitions) isOpen(key partKey) bool {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.logs[key] != nil
}

// openLogsOf returns topic's partition logs that are open now, waiting for
// those being opened (they may have read the topic's configs before a
// change); a closed one reads its topic's configs afresh when it opens.
func (ps *partitions) openLogsOf(topic string) []*log.Log {
	ps.mu.RLock()
	var pending []*openLog
	for key, o := range ps.logs {
		if key.topic == topic {
			pending = append(pending, o)
		}
	}
	ps.mu.RUnlock()
	var open []*log.Log
	for _, o := range pending {
		<-o.ready
		if o.l != nil {
			open = append(open, o.l)
		}
	}
	return open
}

// openCount is the number of open logs and the descriptors they hold.
func (ps *partitions) openCount() (logs, fds int) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(ps.ring), ps.fds
}

// topics lists the topics that have open logs.
func (ps *partitions) topics() []string {
	seen := map[string]bool{}
	ps.mu.RLock()
	for k := range ps.logs {
		seen[k.topic] = true
	}
	ps.mu.RUnlock()
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// take removes every entry matching match from the open set and returns
// them, waiting for their opening to finish, and for closes in progress.
func (ps *partitions) take(match func(partKey) bool) []*openLog {
	return ps.takeWith(match, nil)
}

// takeWith is take; bury, if set, is called under the same lock, so no
// open can slip in between.
func (ps *partitions) takeWith(match func(partKey) bool, bury func()) []*openLog {
	ps.mu.Lock()
	if bury != nil {
		bury()
	}
	var taken []*openLog
	var waits []chan struct{}
	for k, o := range ps.logs {
		if match(k) {
			ps.removeLocked(o)
			delete(ps.logs, k)
			taken = append(taken, o)
		}
	}
	for k, ch := range ps.closing {
		if match(k) {
			waits = append(waits, ch)
		}
	}
	ps.mu.Unlock()
	for _, ch := range waits {
		<-ch
	}
	open := taken[:0]
	for _, o := range taken {
		<-o.ready
		if o.err == nil {
			open = append(open, o)
		}
	}
	return open
}

// deleteTopic closes and removes every local partition of topic, including
// partitions not open in this process, and leaves a tombstone so that a
// request that looked the topic up before the delete cannot open it again.
func (ps *partitions) deleteTopic(topic string) {
	ps.dead.deleting.Lock()
	defer ps.dead.deleting.Unlock()
	taken := ps.takeWith(func(k partKey) bool { return k.topic == topic }, func() { ps.buryLocked(topic) })
	for _, o := range taken {
		if err := o.l.Delete(); err != nil {
			ps.logger.Error("deleting partition", "topic", topic, "partition", o.key.p, "err", err)
		}
	}
	entries, _ := os.ReadDir(ps.dir)
	for _, e := range entries {
		name, _, ok := cutPartitionDir(e.Name())
		if ok && name == topic && e.IsDir() {
			if err := os.RemoveAll(filepath.Join(ps.dir, e.Name())); err != nil {
				ps.logger.Error("deleting partition directory", "dir", e.Name(), "err", err)
			}
		}
	}
}

// cutPartitionDir splits "<topic>-<partition>" (topics may contain '-').
func cutPartitionDir(dir string) (topic string, partition int32, ok bool) {
	i := strings.LastIndexByte(dir, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(dir[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, false
	}
	return dir[:i], int32(p), true
}

func splitHostPort(addr string) (string, int32, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return "", 0, false
	}
	return host, int32(p), true
}
