package loader

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// Loaders that share a topic set (Config.Share): each run takes the locks
// of the topics that are free, skips those another run holds, and takes
// at most Config.MaxTopics of them in a random order, so that several
// loader processes started on the same topics (on several machines, or
// from a scheduler each) divide them without talking to each other. The
// topic locks stay what keeps two runs off one topic; sharing only decides
// which locks a run asks for and what a refusal means.

// SkippedTopic is a topic a sharing run left to the run holding it.
type SkippedTopic struct {
	Topic  string `json:"topic"`
	Holder string `json:"holder"`
}

// lockOrder is the order a run asks for its topics' locks in: sorted, or
// with MaxTopics shuffled, so that runs started together pick different
// topics first.
func (r *run) lockOrder(topics []string) []string {
	if !r.cfg.Share || r.cfg.MaxTopics <= 0 {
		return topics
	}
	order := slices.Clone(topics)
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// skipLocked reports whether a failure to take topic's lock means only
// that another run holds it, which a sharing run notes and passes over.
func (r *run) skipLocked(topic string, err error) bool {
	var held *warehouse.LockedError
	if !r.cfg.Share || !errors.As(err, &held) {
		return false
	}
	r.sum.Skipped = append(r.sum.Skipped, SkippedTopic{Topic: topic, Holder: held.Error()})
	return true
}

// heldTopics is topics less those the run did not lock, in their order.
func (r *run) heldTopics(topics []string) []string {
	var out []string
	for _, t := range topics {
		if r.held[t] {
			out = append(out, t)
		}
	}
	return out
}

// Sharing partitions (Config.MaxPartitions). A run leases at most
// MaxPartitions free partitions that have records to load, in random
// order, and holds no topic lock while it fetches and writes them. To
// commit it takes its topics' locks (waiting for them, in name order, so
// two committing runs cannot wait on each other), reads the topics' newest
// state afresh, checks that nobody committed its partitions meanwhile, and
// commits a manifest holding that state with its own partitions advanced:
// every manifest still holds its topics' whole state, so reading offsets,
// recovery and pruning are unchanged. A run that holds a topic's lock for
// its whole length (without sharing, or sharing by topic) never overlaps a
// partition-sharing run's commit, and the check refuses the commit of one
// whose partitions it loaded meanwhile.

func (r *run) sharePartitions() bool { return r.cfg.Share && r.cfg.MaxPartitions > 0 }

// partitionLockName is the lease of one partition.
func partitionLockName(topic string, p int32) string {
	return fmt.Sprintf("partition-%s.p%d", topic, p)
}

// leasePartitions keeps the plans of the partitions it could lease, and
// drops those another run committed since the state was read.
func (r *run) leasePartitions(ctx context.Context, plans []*partPlan, lost []LostRange) ([]*partPlan, []LostRange, error) {
	var cands []*partPlan
	for _, pl := range plans {
		if pl.start < pl.end {
			cands = append(cands, pl)
		}
	}
	rand.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	var kept []*partPlan
	for _, pl := range cands {
		if len(kept) >= r.cfg.MaxPartitions {
			break
		}
		name := partitionLockName(pl.topic, pl.part)
		l, err := warehouse.AcquireLock(r.w, name, r.cfg.Holder+" run "+r.id, r.cfg.LockTTL)
		if r.skipLocked(fmt.Sprintf("%s/%d", pl.topic, pl.part), err) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("partition %s/%d: %w", pl.topic, pl.part, err)
		}
		r.locks = append(r.locks, l)
		r.leases = append(r.leases, name)
		r.watch(ctx, l)
		kept = append(kept, pl)
	}
	if len(kept) == 0 {
		return nil, nil, nil
	}
	fresh, _, err := loadState(r.w, planTopics(kept))
	if err != nil {
		return nil, nil, fmt.Errorf("reading committed offsets: %w", err)
	}
	var out []*partPlan
	for _, pl := range kept {
		if samePartitionState(pl.prev, fresh, pl) {
			out = append(out, pl)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].part < out[j].part
	})
	var keptLost []LostRange
	for _, l := range lost {
		if slices.ContainsFunc(out, func(pl *partPlan) bool { return pl.topic == l.Topic && pl.part == l.Partition }) {
			keptLost = append(keptLost, l)
		}
	}
	return out, keptLost, nil
}

// samePartitionState reports whether a partition's committed state is
// still the one the run planned from.
func samePartitionState(prev *PartitionState, state map[string]*TopicState, pl *partPlan) bool {
	var now *PartitionState
	if ts := state[pl.topic]; ts != nil {
		now = ts.Partitions[pl.part]
	}
	if prev == nil || now == nil {
		return prev == nil && now == nil
	}
	return prev.Next == now.Next
}

// lockForCommit takes the locks of topics for the commit, waiting up to
// three lock TTLs for each, and returns their newest state once it has
// checked that no other run committed the run's partitions.
func (r *run) lockForCommit(ctx context.Context, topics []string, plans []*partPlan) (map[string]*TopicState, error) {
	deadline := time.Now().Add(3*r.cfg.LockTTL + 10*time.Second)
	for _, t := range topics {
		for {
			l, err := warehouse.AcquireLock(r.w, topicLockName(t), r.cfg.Holder+" run "+r.id+" (commit)", r.cfg.LockTTL)
			if err == nil {
				r.locks = append(r.locks, l)
				r.held[t] = true
				r.watch(ctx, l)
				break
			}
			var held *warehouse.LockedError
			if !errors.As(err, &held) || time.Now().After(deadline) {
				return nil, fmt.Errorf("topic %s: taking its lock to commit: %w", t, err)
			}
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	state, base, err := loadState(r.w, topics)
	if err != nil {
		return nil, fmt.Errorf("reading committed offsets: %w", err)
	}
	r.base = base // the partitions are checked below, the rest at the commit
	for _, pl := range plans {
		if !samePartitionState(pl.prev, state, pl) {
			return nil, fmt.Errorf("partition %s/%d was committed by another run while this one loaded it: not committing", pl.topic, pl.part)
		}
	}
	return state, nil
}

// planTopics are the topics of plans, sorted, once each.
func planTopics(plans []*partPlan) []string {
	var topics []string
	for _, pl := range plans {
		if !slices.Contains(topics, pl.topic) {
			topics = append(topics, pl.topic)
		}
	}
	sort.Strings(topics)
	return topics
}
