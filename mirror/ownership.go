package mirror

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/consumer"
)

// Following the group: which topics to subscribe to, and what to do when
// the group assigns partitions to this process or takes them back.

// followTopics (re)joins the group when the set of matching topics changed.
func (s *source) followTopics(ctx context.Context) error {
	names, err := s.watch.Children(s.zk.Paths.Topics())
	if err != nil {
		s.log.Warn("listing topics; will retry", "err", err)
		return nil
	}
	var topics []string
	for _, t := range names {
		if s.cfg.selects(t) {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	if slices.Equal(topics, s.topics) && s.currentGroup() != nil {
		return nil
	}
	if len(topics) == 0 {
		if s.topics == nil {
			s.log.Warn("no topic matches yet; waiting for one", "topics", s.cfg.Topics, "exclude", s.cfg.Exclude)
			s.topics = []string{}
		}
		return nil
	}
	s.log.Info("joining the mirror group", "group", s.cfg.Group, "topics", topics)
	return s.rejoin(ctx, topics)
}

// rejoin leaves the group (if a member) and joins it again subscribed to
// topics: a consumer's subscription is fixed at join time.
func (s *source) rejoin(ctx context.Context, topics []string) error {
	s.leave()
	g, err := consumer.Join(ctx, consumer.Config{
		ZooKeeper:      s.ZooKeeper,
		Group:          s.cfg.Group,
		Topics:         topics,
		Start:          s.cfg.Start,
		CommitInterval: s.cfg.CommitInterval,
		SessionTimeout: s.cfg.SessionTimeout,
		// A mirror restarted after a crash conflicts with its old owner
		// nodes until their session expires; keep trying through that.
		RebalanceRetries: 100,
		Logger:           s.log,
		ClientOptions: append([]kgo.Opt{
			kgo.FetchMaxWait(500 * time.Millisecond),
			// Where the stored offset is gone (retention deleted it)
			// resume at the oldest record kept; the copy logs the gap.
			// (The group resolves a Largest start itself, so this
			// changes nothing else.)
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		}, s.cfg.FetchOptions...),
		Listener: s.listener(),
		// A record is processed once the target acknowledged its copy
		// (see acked), not when the next one is read.
		MarkManually: true,
		OnAssign:     s.assigned,
		OnRevoke:     s.revoked,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("source %s: joining group %s: %w", s.Name, s.cfg.Group, err)
	}
	s.mu.Lock()
	s.group = g
	s.mu.Unlock()
	s.topics = topics
	s.missing = time.Time{}
	return nil
}

// leave stops copying every partition and leaves the group. Closing the
// group calls revoked, which lets what was sent be acknowledged and marks
// it, so that the group's final commit covers it and whoever copies these
// partitions next (a new subscription, another mirror) does not repeat it.
func (s *source) leave() {
	g := s.currentGroup()
	if g == nil {
		return
	}
	g.Close()
	s.mu.Lock()
	s.group = nil
	retired := s.retired
	s.retired = nil
	s.mu.Unlock()
	logStopped(s, retired, "leaving the group")
}

// drainTimeout bounds the wait for acknowledgements when partitions are
// given up.
const drainTimeout = 5 * time.Second

// assigned is the group's OnAssign: the partitions it claimed, before any
// of their records is delivered. It sets up their copy state from the
// offset registry the group just read; the target side is prepared with
// the first record (see prepare), since the target may be down.
func (s *source) assigned(mine map[string][]int32) {
	s.mu.Lock()
	retired := s.retired
	s.retired = nil
	s.mu.Unlock()
	for _, topic := range sortedKeys(mine) {
		for _, p := range mine[topic] {
			tp := topicPartition{topic, p}
			committed, err := s.readOffset(tp)
			if err != nil {
				s.log.Warn("reading the committed offset; the status shows it once the group commits", "topic", topic, "partition", p, "err", err)
				committed = -1
			}
			start := committed
			if start < 0 {
				if start, err = s.logEdge(context.Background(), tp); err != nil {
					start = -1 // known with the first record
				}
			}
			part := newPartition(s.Name, topic, p, start, committed)
			if old := retired[tp]; old != nil {
				// Released and claimed again by Algorithm 1: the counters
				// go on.
				part.copied.Store(old.copied.Load())
				part.bytes.Store(old.bytes.Load())
				part.skipped.Store(old.skipped.Load())
				part.unknown.Store(old.unknown.Load())
				delete(retired, tp)
			} else {
				s.log.Debug("copying partition", "topic", topic, "partition", p, "from", start)
			}
			s.mu.Lock()
			s.parts[tp] = part
			s.mu.Unlock()
		}
	}
	logStopped(s, retired, "the group gave them to another mirror")
}

// revoked is the group's OnRevoke: the group is about to release (and
// commit) partitions, at every rebalance and when leaving. It stops copying
// them, waits for the target to acknowledge what was sent (bounded by ctx
// and drainTimeout), and marks it, so that the release commit includes it.
func (s *source) revoked(ctx context.Context, revoked map[string][]int32) {
	var parts []*partition
	s.mu.Lock()
	if s.retired == nil {
		s.retired = map[topicPartition]*partition{}
	}
	for topic, ps := range revoked {
		for _, p := range ps {
			tp := topicPartition{topic, p}
			part := s.parts[tp]
			if part == nil {
				continue
			}
			part.mu.Lock()
			part.revoked = true
			part.mu.Unlock()
			delete(s.parts, tp)
			s.retired[tp] = part
			parts = append(parts, part)
		}
	}
	g := s.group
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	drain(ctx, parts)
	if g == nil {
		return // the first Join: nothing was copied yet
	}
	for _, part := range parts {
		part.mu.Lock()
		safe := part.acks.safe
		part.mu.Unlock()
		if safe >= 0 {
			g.MarkProcessed(part.topic, part.partition, safe)
		}
	}
}

// logStopped logs the partitions given up for good.
func logStopped(s *source, parts map[topicPartition]*partition, why string) {
	if len(parts) == 0 {
		return
	}
	removed := map[string][]int32{}
	for tp := range parts {
		removed[tp.topic] = append(removed[tp.topic], tp.partition)
	}
	for _, ps := range removed {
		slices.Sort(ps)
	}
	s.log.Info("stopped copying partitions", "why", why, "partitions", fmt.Sprint(removed))
}

// drain waits until the target acknowledged every record sent for parts,
// or ctx ends.
func drain(ctx context.Context, parts []*partition) {
	for _, p := range parts {
		for p.inflight.Load() > 0 && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

func (s *source) currentGroup() *consumer.Group {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.group
}

// checkGroup rejoins when our registration in the consumer registry has
// been gone for longer than a session expiry takes to repair: the group
// has failed (see consumer.Config.RebalanceRetries) and would never
// rebalance again.
func (s *source) checkGroup(ctx context.Context) {
	g := s.currentGroup()
	if g == nil {
		return
	}
	ok, _, err := s.zk.Conn.Exists(s.zk.Paths.Consumer(s.cfg.Group, g.ID()))
	if err != nil || ok {
		s.missing = time.Time{}
		return
	}
	if s.missing.IsZero() {
		s.missing = time.Now()
		return
	}
	if time.Since(s.missing) < 3*s.cfg.SessionTimeout {
		return
	}
	s.log.Error("our consumer registration is gone and the group did not restore it; rejoining", "consumer", g.ID())
	if err := s.rejoin(ctx, s.topics); err != nil {
		s.stop(ctx, err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
