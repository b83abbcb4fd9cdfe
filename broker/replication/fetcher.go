package replication

// Replication, the follower's side: one fetcher per leader broker copies
// every partition this broker follows from that leader, with the Fetch
// API (replica id set to this broker's id) on a connection to the
// leader's inter-broker listener (conn.go).
//
// Each round asks for every followed partition from the offset up to
// which its local log is fsynced, appends what comes back as it is
// (log.AppendReplica keeps the leader's offsets), and waits for the flush
// that covers it before the next round: so the next fetch offset tells
// the leader what this broker holds on disk, which is what the leader's
// high watermark and acks=all count. The leader serves up to its log end,
// flushed or not, so this fsync runs alongside the leader's own; records
// the leader then loses in a crash are cut from this log by leader epoch
// before it follows a leader without them (truncate.go).
//
// Before it fetches a partition in a new leader epoch, a fetcher cuts the
// partition's log where it diverges from the leader's
// (truncate.go). A follower's log start follows the leader's
// (DeleteRecords, retention), and a replica a reassignment adds may be
// throttled (throttle.go).
//
// The fetchers follow the cluster view (ReconcileFetchers runs on every
// change): a partition whose leader changes moves to the new leader's
// fetcher, one this broker now leads leaves them.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/recordbatch"
)

const (
	replicaFetchVersion  = 11 // the last Fetch version with a v0 response header
	replicaFetchWait     = 500 * time.Millisecond
	replicaFetchMaxBytes = 16 << 20
	replicaPartitionMax  = 1 << 20
	replicaRetry         = 200 * time.Millisecond
)

// fetcher copies the partitions this broker follows from one leader.
type fetcher struct {
	rs     *Manager
	leader int32

	mu       sync.Mutex
	parts    map[partKey]cluster.Topic
	diverged map[partKey]bool // not fetched until the view changes (see store)

	// Used by the run goroutine only: the leader epoch in which each
	// partition was last truncated to the leader's log
	// (truncate.go), and the partitions checked again after the
	// leader said the follower is past its end.
	checked   map[partKey]int32
	rechecked map[partKey]bool
	skipTo    map[partKey]int64 // fetched from the leader's log start, past this log's end (logstart.go)
	wake      chan struct{}
	conn      net.Conn // the current connection, closed to stop a fetch in flight

	stop chan struct{}
	done chan struct{}
}

// ReconcileFetchers makes the fetchers follow the view: for each
// replicated partition of which this broker is a replica but not the
// leader, the leader's fetcher copies it. Then copies of partitions this
// broker is no longer a replica of are deleted (stray.go).
func (rs *Manager) ReconcileFetchers() {
	rs.followView()
	rs.strayOnce.Do(func() { go rs.removeStrays() })
	signal(rs.strayWake)
}

// followView gives each fetcher the partitions it copies now.
func (rs *Manager) followView() {
	want := map[int32]map[partKey]cluster.Topic{}
	for _, t := range rs.env.meta.Topics() {
		if !t.Replicated() {
			continue
		}
		for p := range t.Partitions() {
			st, ok := t.StateOf(p)
			if !ok || st.Leader < 0 || st.Leader == rs.env.selfID || !slices.Contains(t.ReplicasOf(p), rs.env.selfID) {
				continue
			}
			if want[st.Leader] == nil {
				want[st.Leader] = map[partKey]cluster.Topic{}
			}
			want[st.Leader][partKey{t.Name, p}] = t
		}
	}
	var stale []*fetcher
	defer func() {
		for _, f := range stale { // outside rs.mu, which their last round may need
			f.close()
		}
	}()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return
	}
	for id, f := range rs.fetchers {
		if want[id] == nil {
			stale = append(stale, f)
			delete(rs.fetchers, id)
		}
	}
	for id, parts := range want {
		f := rs.fetchers[id]
		if f == nil {
			f = &fetcher{rs: rs, leader: id, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
				checked: map[partKey]int32{}, rechecked: map[partKey]bool{}, skipTo: map[partKey]int64{}}
			rs.fetchers[id] = f
			go f.run()
		}
		f.mu.Lock()
		f.parts, f.diverged = parts, nil
		f.mu.Unlock()
		signal(f.wake)
	}
}

// CloseFetchers stops every fetcher and checkpoints the high watermarks
// (shutdown, once no request is served any more).
func (rs *Manager) CloseFetchers() {
	rs.mu.Lock()
	fs := rs.fetchers
	rs.fetchers, rs.closed = map[int32]*fetcher{}, true
	rs.mu.Unlock()
	for _, f := range fs {
		f.close()
	}
	started := true
	rs.strayOnce.Do(func() { started = false })
	if started {
		<-rs.strayDone // stops at stopSync, closed before this
	}
	rs.checkpointHighWatermarks()
}

func (f *fetcher) close() {
	close(f.stop)
	f.mu.Lock()
	if f.conn != nil {
		f.conn.Close()
	}
	f.mu.Unlock()
	<-f.done
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (f *fetcher) stopped() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

// run fetches until stopped, reconnecting after any failure.
func (f *fetcher) run() {
	defer close(f.done)
	var c *PeerConn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	failures := 0
	for !f.stopped() {
		f.mu.Lock()
		parts := f.parts
		if len(f.diverged) > 0 {
			parts = maps.Clone(parts)
			maps.DeleteFunc(parts, func(k partKey, _ cluster.Topic) bool { return f.diverged[k] })
		}
		f.mu.Unlock()
		if len(parts) == 0 {
			select {
			case <-f.stop:
			case <-f.wake:
			}
			continue
		}
		err := error(nil)
		if c == nil {
			c, err = f.dial()
		}
		if err == nil {
			err = c.Renew(&f.rs.renewals)
		}
		if err == nil {
			f.rs.gate.RLock()
			err = f.round(c, parts)
			f.rs.gate.RUnlock()
		}
		if err == nil {
			failures = 0
			continue
		}
		if errors.Is(err, errNothingServed) {
			select {
			case <-f.stop:
			case <-f.wake:
			case <-time.After(replicaRetry):
			}
			continue
		}
		if c != nil {
			c.Close()
			c = nil
		}
		if f.stopped() {
			return
		}
		if failures++; failures == 1 || failures%50 == 0 {
			f.rs.env.logger.Warn("fetching from the leader failed; retrying", "leader", f.leader, "err", err, "failures", failures)
		}
		select {
		case <-f.stop:
		case <-time.After(replicaRetry):
		}
	}
}

// round is one fetch of every followed partition.
func (f *fetcher) round(c *PeerConn, parts map[partKey]cluster.Topic) error {
	e := f.rs.env
	req := kmsg.NewPtrFetchRequest()
	req.Version = replicaFetchVersion
	req.ReplicaID = e.selfID
	req.MaxWaitMillis = int32(replicaFetchWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = replicaFetchMaxBytes
	req.SessionEpoch = -1
	byTopic := map[string]int{}
	keys := make([]partKey, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b partKey) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.p, b.p))
	})
	f.openTogether(parts, keys)
	logs := make(map[partKey]*log.Log, len(keys))
	var checks []epochCheck
	for _, k := range keys {
		l, err := e.logs.Get(parts[k], k.p)
		if err != nil {
			return fmt.Errorf("opening %s-%d to follow it: %w", k.topic, k.p, err)
		}
		if !f.rs.env.repair.repairBeforeFollowing(k, l) {
			continue // not fetched until its log can be cut back (repair.go)
		}
		logs[k] = l
		if st, ok := parts[k].StateOf(k.p); ok {
			if e, done := f.checked[k]; !done || e != st.LeaderEpoch {
				checks = append(checks, epochCheck{key: k, t: parts[k], l: l, leaderEpoch: st.LeaderEpoch})
			}
		}
	}
	unchecked := map[partKey]bool{}
	if len(checks) > 0 {
		for _, ec := range checks {
			unchecked[ec.key] = true
		}
		settled, err := f.truncateToLeader(c, checks)
		for _, ec := range settled {
			f.checked[ec.key] = ec.leaderEpoch
			delete(unchecked, ec.key)
		}
		if err != nil {
			return err
		}
	}
	_, rate := e.throttleRates()
	throttled := map[partKey]bool{}
	for _, k := range keys {
		if unchecked[k] || logs[k] == nil {
			continue // the leader could not answer for its epoch yet, or a repair waits
		}
		if f.rs.followerThrottled(parts[k], k.p, rate) {
			if f.rs.followerQuota.exceeded(rate) {
				f.rs.throttledFetches.Add(1)
				continue // over the follower throttle (throttle.go)
			}
			throttled[k] = true
		}
		l := logs[k]
		i, ok := byTopic[k.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[k.topic] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = k.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = k.p
		rp.CurrentLeaderEpoch = -1
		rp.FetchOffset = f.fetchOffset(k, l)
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = replicaPartitionMax
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if len(req.Topics) == 0 {
		return errNothingServed
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = replicaFetchVersion
	if err := c.RoundTrip(req, resp, replicaFetchWait+10*time.Second); err != nil {
		return err
	}
	if code := resp.ErrorCode; code != 0 {
		return fmt.Errorf("leader %d refused the fetch: %w", f.leader, kerr.ErrorForCode(code))
	}
	served := false
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			k := partKey{rt.Topic, rp.Partition}
			t, ok := parts[k]
			if !ok {
				continue
			}
			served = served || rp.ErrorCode == 0
			if throttled[k] {
				f.rs.followerQuota.record(int64(len(rp.RecordBatches)))
			}
			if err := f.store(t, rp); err != nil {
				return err
			}
		}
	}
	if !served {
		return errNothingServed
	}
	return nil
}

// openTogether opens the logs of keys that are not open yet, several at a
// time (partition.Table.OpenTogether), before the round takes them one by
// one: opening creates a new partition's log (a directory fsync) or
// recovers one after a crash, and a follower of a new 3,000-partition topic
// opened its 2,000 logs one after the other in its first round, which held
// that round (and the leaders' acks=all) for seconds. Failures are the
// round's to report.
func (f *fetcher) openTogether(parts map[partKey]cluster.Topic, keys []partKey) {
	var want []partition.Want // usually none: every round after the first finds them open
	for _, k := range keys {
		if !f.rs.env.logs.IsOpen(k.topic, k.p) {
			want = append(want, partition.Want{Topic: parts[k], Partition: k.p})
		}
	}
	f.rs.env.logs.OpenTogether(want)
}

// errNothingServed is a round whose every partition the leader refused
// (it does not know yet that it leads them, or no longer does): the
// fetcher waits a little rather than ask again at once.
var errNothingServed = errors.New("the leader served none of the partitions")

// store appends one partition's fetched batches and waits for their flush.
func (f *fetcher) store(t cluster.Topic, rp kmsg.FetchResponseTopicPartition) error {
	e := f.rs.env
	if rp.ErrorCode != 0 {
		err := kerr.ErrorForCode(rp.ErrorCode)
		if errors.Is(err, kerr.OffsetOutOfRange) {
			key := partKey{t.Name, rp.Partition}
			if f.belowLeadersStart(t, rp) {
				return nil
			}
			if !f.rechecked[key] {
				// The leader's log ends before this one: ask again where
				// they diverge, once.
				f.rechecked[key] = true
				delete(f.checked, key)
				return nil
			}
			e.logger.Error("follower's log is ahead of its leader's and the leader epochs do not say where they diverge; it waits for the next leader change",
				"topic", t.Name, "partition", rp.Partition, "leader", f.leader)
			f.mu.Lock()
			if f.diverged == nil {
				f.diverged = map[partKey]bool{}
			}
			f.diverged[key] = true
			f.mu.Unlock()
		}
		return nil // a leader change: the view moves this partition
	}
	key := partKey{t.Name, rp.Partition}
	delete(f.rechecked, key)
	f.rs.mu.Lock()
	f.rs.learned[key] = rp.HighWatermark
	f.rs.mu.Unlock()
	batches, err := splitRecordBatches(rp.RecordBatches)
	if err != nil {
		return err
	}
	l, err := e.logs.Get(t, rp.Partition)
	if err != nil {
		return err
	}
	f.followLogStart(t.Name, rp.Partition, l, rp.LogStartOffset)
	if len(batches) == 0 {
		return nil
	}
	res, err := l.AppendReplica(batches)
	if err != nil {
		return fmt.Errorf("appending %s-%d from leader %d: %w", t.Name, rp.Partition, f.leader, err)
	}
	if res.Duplicate {
		return nil
	}
	ctx, cancel := e.ctx()
	defer cancel()
	return l.WaitFlushed(ctx, res.LastOffset)
}

// followLogStart moves a followed log's start offset up to the leader's
// (records deleted there by DeleteRecords or retention), as far as this
// log holds on disk, so that a follower elected leader never serves what
// was deleted, and its leader-epoch cache is trimmed like the leader's.
func (f *fetcher) followLogStart(topic string, p int32, l *log.Log, leaderStart int64) {
	to := min(leaderStart, l.HighWatermark())
	if to <= l.StartOffset() {
		return
	}
	if _, err := l.DeleteRecordsBefore(to); err != nil {
		f.rs.env.logger.Warn("moving a followed partition's log start to its leader's failed", "topic", topic,
			"partition", p, "leader", f.leader, "start_offset", to, "err", err)
	}
}

// splitRecordBatches cuts a fetch response's records into whole batches;
// a partial batch at the end (a leader may cut one) is left for the next
// fetch.
func splitRecordBatches(records []byte) ([][]byte, error) {
	var out [][]byte
	for len(records) >= recordbatch.LengthPrefix {
		size := recordbatch.FramedSize(records)
		if size < recordbatch.HeaderSize {
			return nil, fmt.Errorf("the leader sent a record batch of %d bytes", size)
		}
		if size > int64(len(records)) {
			break
		}
		out = append(out, records[:size])
		records = records[size:]
	}
	return out, nil
}
