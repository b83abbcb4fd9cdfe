package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/consumer"
)

// Following the group: which topics to subscribe to, and which partitions
// the group gave this process (see source for why the group does not fetch).

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
		CommitInterval: -1, // the group never has anything to commit; see source
		SessionTimeout: s.cfg.SessionTimeout,
		// A mirror restarted after a crash conflicts with its old owner
		// nodes until their session expires; keep trying through that.
		RebalanceRetries: 100,
		Logger:           s.log,
		// The group's client is never polled, so it holds one small fetch.
		ClientOptions: []kgo.Opt{kgo.FetchMaxBytes(1), kgo.FetchMaxPartitionBytes(1)},
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

// leave stops copying every partition and leaves the group.
func (s *source) leave() {
	g := s.currentGroup()
	dropped := s.applyOwnership(nil, "leaving the group")
	if g != nil {
		// The owner nodes are still ours: let what was sent be
		// acknowledged and commit it, so that whoever copies these
		// partitions next (a new subscription, another mirror) does not
		// repeat it.
		s.drain(dropped, drainTimeout)
		s.commitParts(g.ID(), dropped)
	}
	s.mu.Lock()
	s.group = nil
	s.mu.Unlock()
	if g != nil {
		g.Close()
	}
}

// drainTimeout bounds the wait for acknowledgements when leaving the group.
const drainTimeout = 5 * time.Second

// drain waits until the target acknowledged every record sent for parts,
// or timeout.
func (s *source) drain(parts []*partition, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, p := range parts {
		for p.inflight.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
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

// syncOwnership makes the fetched partitions those the group assigned us.
func (s *source) syncOwnership(ctx context.Context) error {
	g := s.currentGroup()
	var want map[string][]int32
	if g != nil {
		want = g.Assigned()
	}
	s.applyOwnership(want, "the group gave them to another mirror")
	counts := map[string]int32{}
	for topic, ps := range want {
		for _, p := range ps {
			tp := topicPartition{topic, p}
			s.mu.RLock()
			_, have := s.parts[tp]
			s.mu.RUnlock()
			if have {
				continue
			}
			part, err := s.startPartition(ctx, tp, counts)
			if err != nil {
				var fatal *fatalError
				if errors.As(err, &fatal) {
					return err
				}
				if ctx.Err() == nil && time.Since(s.lastWarn) > 30*time.Second {
					s.lastWarn = time.Now()
					s.log.Warn("cannot start copying partition yet; will retry", "topic", topic, "partition", p, "err", err)
				}
				return nil
			}
			start := part.next // part is shared once published
			s.mu.Lock()
			s.parts[tp] = part
			s.mu.Unlock()
			s.fetch.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(start)}})
			s.log.Debug("copying partition", "topic", topic, "partition", p, "from", start, "target_partition", part.target)
		}
	}
	return nil
}

// applyOwnership stops copying the partitions not in want (nil: all) and
// returns them.
func (s *source) applyOwnership(want map[string][]int32, why string) []*partition {
	removed := map[string][]int32{}
	var dropped []*partition
	s.mu.Lock()
	for tp, part := range s.parts {
		if slices.Contains(want[tp.topic], tp.partition) {
			continue
		}
		part.mu.Lock()
		part.revoked = true
		part.mu.Unlock()
		delete(s.parts, tp)
		removed[tp.topic] = append(removed[tp.topic], tp.partition)
		dropped = append(dropped, part)
	}
	s.mu.Unlock()
	if len(removed) > 0 {
		s.fetch.RemoveConsumePartitions(removed)
		for _, ps := range removed {
			slices.Sort(ps)
		}
		s.log.Info("stopped copying partitions", "why", why, "partitions", fmt.Sprint(removed))
	}
	return dropped
}
