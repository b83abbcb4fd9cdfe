package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Following the group: what to do when it assigns partitions to this
// process or takes them back.

// assigned is the group's AdjustFetchOffsetsFn: the partitions it just
// gave this process, before any of their records is fetched. The group has
// no committed offsets (the mirror commits none); each partition's start
// is read from the target instead (resume), and replaces what the group
// fetched.
func (s *source) assigned(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	for _, topic := range sortedKeys(offsets) {
		ps := slices.Sorted(func(yield func(int32) bool) {
			for p := range offsets[topic] {
				if !yield(p) {
					return
				}
			}
		})
		committed := map[int32]int64{} // by an older mirror (this one commits nothing)
		for p, o := range offsets[topic] {
			committed[p] = o.EpochOffset().Offset
		}
		// With transactions, every earlier owner is fenced before the
		// tail is read (txn.go).
		writers, err := s.fence(ctx, topic, ps)
		var parts map[int32]*partition
		if err == nil {
			parts, err = s.resume(ctx, topic, ps, committed)
		}
		if err != nil {
			for _, w := range writers {
				w.cl.Close()
			}
			var fatal *fatalError
			if errors.As(err, &fatal) {
				s.stop(context.Background(), err)
			}
			return nil, err
		}
		for p, part := range parts {
			part.w = writers[p]
			s.mu.Lock()
			s.parts[topicPartition{topic, p}] = part
			if part.w != nil {
				s.writers[part.w] = struct{}{}
			}
			s.mu.Unlock()
			if part.w != nil {
				go s.write(s.runCtx, part)
			}
			offsets[topic][p] = kgo.NewOffset().At(part.next).WithEpoch(-1)
		}
	}
	return offsets, nil
}

// fence makes the transactional writers of partitions ps of topic, all at
// once: each initialization waits for the target to complete what the
// partition's earlier owner left. Nil without transactions.
func (s *source) fence(ctx context.Context, topic string, ps []int32) (map[int32]*writer, error) {
	if s.cfg.NoTransactions {
		return nil, nil
	}
	s.log.Info("initializing the partitions' transactional producers: earlier owners are fenced, and what they left open ends before the target is read",
		"topic", topic, "partitions", fmt.Sprint(ps))
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
		out      = map[int32]*writer{}
	)
	for _, p := range ps {
		wg.Go(func() {
			w, err := s.newWriter(ctx, topic, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out[p] = w
		})
	}
	wg.Wait()
	if firstErr != nil {
		for _, w := range out {
			w.cl.Close()
		}
		return nil, firstErr
	}
	return out, nil
}

// drainTimeout bounds the wait for acknowledgements when partitions are
// given up. A copy the target acknowledges after it, once the next owner
// has read the tail, is a duplicate: the one window a mirror without
// transactions leaves, and why the wait is generous.
const drainTimeout = 20 * time.Second

// revoked is the group's OnPartitionsRevoked: the group is about to give
// partitions to another process (or this one is leaving). It stops copying
// them and waits for the target to acknowledge what was sent, so that the
// next owner, reading the target's tail, sees it.
func (s *source) revoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	parts := s.release(revoked, "the group gave them to another mirror")
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	drain(ctx, parts)
}

// lost is the group's OnPartitionsLost: this process was cut off from the
// group for longer than its session, and another may copy the partitions
// already. Stop at once.
func (s *source) lost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	s.release(lost, "lost the group membership")
}

func (s *source) release(ps map[string][]int32, why string) []*partition {
	var parts []*partition
	s.mu.Lock()
	for topic, list := range ps {
		for _, p := range list {
			tp := topicPartition{topic, p}
			part := s.parts[tp]
			if part == nil {
				continue
			}
			part.mu.Lock()
			part.revoked = true
			part.mu.Unlock()
			if part.w != nil {
				part.w.poke() // commit what is open, then exit
			}
			delete(s.parts, tp)
			parts = append(parts, part)
		}
	}
	s.mu.Unlock()
	if len(parts) > 0 {
		s.log.Info("stopped copying partitions", "why", why, "partitions", fmt.Sprint(ps))
	}
	return parts
}

// drain waits until the target acknowledged every record sent for parts,
// or ctx ends.
func drain(ctx context.Context, parts []*partition) {
	for _, p := range parts {
		if p.w != nil {
			// The writer commits what it has, then exits.
			select {
			case <-p.w.done:
			case <-ctx.Done():
			}
			continue
		}
		for p.inflight.Load() > 0 && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
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
