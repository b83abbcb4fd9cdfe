package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// followRegistries runs Algorithm 1 again on every watcher event until
// Close, and puts the consumer back after a ZooKeeper session expiry.
func (g *Group) followRegistries() {
	defer g.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-g.stop
		cancel()
	}()
	registered := true
	backoff := g.cfg.RebalanceBackoff
	var retry <-chan time.Time
	for {
		select {
		case <-g.stop:
			return
		case <-g.watch.Fired():
		case <-g.s.Expired:
			// Our owner nodes went with the session and someone else may
			// own the partitions already: stop delivering them now.
			g.dropAll()
			registered = false
			continue
		case <-g.s.Renewed: // registered is false since Expired
		case <-retry:
		}
		var err error
		if !registered {
			if err = g.register(ctx); err == nil {
				registered = true
				g.log.Info("re-registered after ZooKeeper session expiry")
			}
		}
		if err == nil {
			err = g.rebalance(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		var fatal *rebalanceFailed
		if errors.As(err, &fatal) {
			g.failed(err)
			return
		}
		if err != nil {
			g.log.Warn("rebalance failed; retrying", "err", err, "in", backoff)
			retry = time.After(backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		retry, backoff = nil, g.cfg.RebalanceBackoff
	}
}

// rebalanceFailed is returned when conflicts did not settle within
// Config.RebalanceRetries attempts.
type rebalanceFailed struct {
	group    string
	attempts int
	last     error
}

func (e *rebalanceFailed) Error() string {
	return fmt.Sprintf("consumer group %s: no stable partition ownership after %d attempts (last: %v); "+
		"check that every member runs the same assignment (same Tributary version) and that the group's consumers can reach ZooKeeper; "+
		"raise RebalanceRetries for very large groups", e.group, e.attempts, e.last)
}

// rebalance runs Algorithm 1 until it claims its partitions without a
// conflict, backing off with jitter between attempts.
func (g *Group) rebalance(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		// Events so far are covered by the read this attempt is about to
		// make; later ones will trigger another rebalance.
		select {
		case <-g.watch.Fired():
		default:
		}
		err := g.attempt(ctx)
		var conflict *conflictError
		if errors.As(err, &conflict) {
			if attempt >= g.cfg.RebalanceRetries {
				return &rebalanceFailed{group: g.cfg.Group, attempts: attempt, last: err}
			}
			wait := g.backoff(attempt)
			g.log.Debug("ownership conflict; released everything, retrying", "attempt", attempt, "conflict", err, "wait", wait)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if err != nil {
			return err
		}
		g.mu.Lock()
		g.stats.Rebalances++
		g.stats.LastAttempts = attempt
		g.stats.MaxAttempts = max(g.stats.MaxAttempts, attempt)
		g.mu.Unlock()
		g.log.Info("rebalanced", "attempts", attempt, "retries", attempt-1, "owns", describe(g.Assigned()))
		return nil
	}
}

// backoff doubles from RebalanceBackoff up to 2s, with "equal jitter" (half
// fixed, half random) so that consumers that conflicted together do not
// retry together.
func (g *Group) backoff(attempt int) time.Duration {
	d := min(g.cfg.RebalanceBackoff<<(attempt-1), 2*time.Second)
	return d/2 + rand.N(d/2+1)
}

// attempt is one run of Algorithm 1.
func (g *Group) attempt(ctx context.Context) error {
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.pause()
	defer g.resume()

	g.revoke(ctx)
	g.releaseAll()
	g.unclaim(g.stale) // owner nodes that survived a suspected session loss
	g.stale = nil
	v, err := g.read()
	if err != nil {
		return err
	}
	if len(v.seeds) > 0 && !slices.Equal(v.seeds, g.seeds) {
		if err := g.client.UpdateSeedBrokers(v.seeds...); err == nil {
			g.seeds = v.seeds
		}
	}
	mine := Assign(v.partitions, v.subscribers, g.id)
	session := g.s.Conn.SessionID()
	if err := g.claim(mine); err != nil {
		return err
	}
	positions := map[topicPartition]*position{}
	for topic, ps := range mine {
		for _, p := range ps {
			positions[topicPartition{topic, p}] = &position{next: -1, done: -1, committed: -1, session: session}
		}
	}
	if g.s.Conn.SessionID() != session {
		return fmt.Errorf("the ZooKeeper session changed during the rebalance")
	}
	offsets, err := g.startOffsets(ctx, positions)
	if err != nil {
		g.unclaim(positions)
		return err
	}
	g.mu.Lock()
	g.owned = positions
	g.mu.Unlock()
	if g.cfg.OnAssign != nil && len(mine) > 0 {
		g.cfg.OnAssign(mine)
	}
	if len(offsets) > 0 {
		g.client.AddConsumePartitions(offsets)
	}
	return nil
}

// revoke calls Config.OnRevoke with the owned partitions, if any, before
// their release commit. Next is paused.
func (g *Group) revoke(ctx context.Context) {
	if g.cfg.OnRevoke == nil {
		return
	}
	g.mu.Lock()
	owned := byTopic(g.owned)
	g.mu.Unlock()
	if len(owned) == 0 {
		return
	}
	for _, ps := range owned {
		slices.Sort(ps)
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.SessionTimeout)
	defer cancel()
	g.cfg.OnRevoke(ctx, owned)
}

// startOffsets reads where each claimed partition resumes. Partitions the
// group never committed start as configured; with Largest the end offset is
// looked up and stored right away (see Largest).
func (g *Group) startOffsets(ctx context.Context, positions map[topicPartition]*position) (map[string]map[int32]kgo.Offset, error) {
	offsets := map[string]map[int32]kgo.Offset{}
	set := func(tp topicPartition, o kgo.Offset) {
		if offsets[tp.topic] == nil {
			offsets[tp.topic] = map[int32]kgo.Offset{}
		}
		offsets[tp.topic][tp.partition] = o
	}
	var missing []topicPartition
	for tp, pos := range positions {
		off, err := g.readOffset(tp)
		if err != nil {
			return nil, err
		}
		if off < 0 {
			missing = append(missing, tp)
			continue
		}
		pos.next, pos.done, pos.committed = off, off, off
		set(tp, kgo.NewOffset().At(off))
	}
	if len(missing) == 0 {
		return offsets, nil
	}
	if g.cfg.Start == Smallest {
		for _, tp := range missing {
			set(tp, kgo.NewOffset().AtStart())
		}
		return offsets, nil
	}
	var topics []string
	for _, tp := range missing {
		topics = append(topics, tp.topic)
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(g.client).ListEndOffsets(lctx, slices.Compact(slices.Sorted(slices.Values(topics)))...)
	if err != nil {
		return nil, fmt.Errorf("looking up the end offsets of new partitions: %w", err)
	}
	for _, tp := range missing {
		end, ok := ends.Lookup(tp.topic, tp.partition)
		if !ok || end.Err != nil {
			return nil, fmt.Errorf("looking up the end offset of %s/%d: %v", tp.topic, tp.partition, end.Err)
		}
		pos := positions[tp]
		if err := g.writeOffset(tp, pos, end.Offset); err != nil {
			return nil, err
		}
		pos.next, pos.done, pos.committed = end.Offset, end.Offset, end.Offset
		set(tp, kgo.NewOffset().At(end.Offset))
	}
	return offsets, nil
}

// releaseAll is Algorithm 1's first step: stop fetching every owned
// partition, commit what was processed, and delete the owner nodes. The
// caller holds commitMu and has paused Next.
func (g *Group) releaseAll() {
	g.mu.Lock()
	owned := g.owned
	g.owned = map[topicPartition]*position{}
	g.buf = nil
	g.mu.Unlock()
	if len(owned) == 0 {
		return
	}
	g.client.RemoveConsumePartitions(byTopic(owned))
	for tp, pos := range owned {
		if pos.done >= 0 && pos.done != pos.committed {
			if err := g.writeOffset(tp, pos, pos.done); err != nil {
				g.log.Warn("offset not committed on release; the next owner repeats from the previous commit", "err", err)
			}
		}
	}
	g.unclaim(owned)
}

// dropAll stops delivering every partition without committing, once the
// session (and with it our ownership) is gone or presumed gone. If the
// session survives after all, the next rebalance deletes the owner nodes
// left behind.
func (g *Group) dropAll() {
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.pause()
	defer g.resume()
	g.mu.Lock()
	owned := g.owned
	g.owned = map[topicPartition]*position{}
	g.buf = nil
	g.mu.Unlock()
	if len(owned) > 0 {
		if g.stale == nil {
			g.stale = map[topicPartition]*position{}
		}
		maps.Copy(g.stale, owned)
		g.client.RemoveConsumePartitions(byTopic(owned))
		g.log.Warn("ZooKeeper session expired; stopped consuming until the group rebalances", "dropped", len(owned))
	}
}

// pause stops Next from fetching, and waits for a fetch in flight to hand
// over its records, so that nothing fetched before a rebalance is delivered
// after it. Pauses nest.
func (g *Group) pause() {
	g.mu.Lock()
	g.paused++
	if g.paused == 1 {
		g.resumed = make(chan struct{})
	}
	polling, cancel := g.polling, g.cancelFn
	g.mu.Unlock()
	if polling != nil {
		cancel()
		<-polling
	}
}

func (g *Group) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused--
	if g.paused == 0 {
		close(g.resumed)
	}
}

func byTopic(owned map[topicPartition]*position) map[string][]int32 {
	out := map[string][]int32{}
	for tp := range owned {
		out[tp.topic] = append(out[tp.topic], tp.partition)
	}
	return out
}

// describe renders an assignment compactly for logs: "clicks:0-3,7 views:2".
func describe(a map[string][]int32) string {
	var parts []string
	for _, topic := range slices.Sorted(maps.Keys(a)) {
		ps := a[topic]
		var runs []string
		for i := 0; i < len(ps); {
			j := i
			for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
				j++
			}
			if i == j {
				runs = append(runs, fmt.Sprint(ps[i]))
			} else {
				runs = append(runs, fmt.Sprintf("%d-%d", ps[i], ps[j]))
			}
			i = j + 1
		}
		parts = append(parts, topic+":"+strings.Join(runs, ","))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}
