package mirror

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/consumer"
)

// Where a source partition resumes, found in the target (see origin.go):
// at start, after a rebalance gave this process the partition, and after a
// copy failed. Nothing in the source records the mirror's progress, so a
// new target starts at the source's beginning, never where another
// target's mirror stopped.
//
// With the same partition count on both sides, source partition p goes to
// target partition p only, and resumes right after the last copy found
// there. With placement by key hash, p's records spread over every target
// partition; copies to different target partitions are not acknowledged in
// order, so a crash can leave a later record copied and an earlier one
// not. Each target partition t then says how far p got in t (copiedTo[t]):
// the copy resumes at the smallest of those, and a record is skipped when
// its placement says it goes to a t that already holds it.

// Upgrading from a mirror that committed source offsets: its copies carry
// a name-only origin header, so the target holds no hop to resume after.
// When a target partition holds such copies from this source and no newer
// ones, the offset that mirror committed for the group (committed, -1 if
// none) is where the copy resumes, once; a new target, holding none, still
// starts at the source's beginning whatever was committed.

// resume builds the copy state of the source partitions ps of topic, each
// starting where the target says it stopped.
func (s *source) resume(ctx context.Context, topic string, ps []int32, committed map[int32]int64) (map[int32]*partition, error) {
	n, err := retry(ctx, s.log, s.events.failures.WithLabelValues("source"), "reading topic "+topic, func() (int32, error) {
		return s.partitionCount(ctx, topic)
	})
	if err != nil {
		return nil, err
	}
	configs, err := retry(ctx, s.log, s.events.failures.WithLabelValues("source"), "reading the configs of topic "+topic, func() (map[string]string, error) {
		return topicConfigs(ctx, s.adm, topic)
	})
	if err != nil {
		return nil, err
	}
	dst := s.cfg.targetTopic(s.Name, topic)
	targetN, err := s.tgt.ensureTopic(ctx, s.Name, dst, n, configs)
	if err != nil {
		return nil, err
	}
	starts, err := retry(ctx, s.log, s.events.failures.WithLabelValues("source"), "listing offsets of "+topic, func() (map[int32]int64, error) {
		return s.offsets(ctx, topic, consumer.Smallest)
	})
	if err != nil {
		return nil, err
	}
	edges := starts
	if s.cfg.Start == consumer.Largest {
		edges, err = retry(ctx, s.log, s.events.failures.WithLabelValues("source"), "listing offsets of "+topic, func() (map[int32]int64, error) {
			return s.offsets(ctx, topic, consumer.Largest)
		})
		if err != nil {
			return nil, err
		}
	}
	out := map[int32]*partition{}
	failures := s.events.failures.WithLabelValues("target")
	if n == targetN {
		for _, p := range ps {
			var legacy bool
			found, err := retry(ctx, s.log, failures, fmt.Sprintf("reading the tail of target partition %s/%d", dst, p), func() (map[int32]int64, error) {
				found, l, err := s.tgt.lastCopies(ctx, dst, p, s.Name, map[int32]bool{p: true})
				legacy = l
				return found, err
			})
			if err != nil {
				return nil, err
			}
			from, why := edges[p], "the target holds no copy of it"
			if last, ok := found[p]; ok {
				from, why = last+1, "right after its last copy in the target"
			} else if c, ok := committed[p]; ok && c >= 0 && legacy {
				from, why = c, "the target holds copies by an older mirror only: where it committed"
			}
			part := newPartition(s.Name, topic, p, from)
			part.dstTopic, part.target, part.targetN = dst, p, targetN
			s.logResume(part, why)
			out[p] = part
		}
		return out, nil
	}
	want := map[int32]bool{}
	for _, p := range ps {
		want[p] = true
	}
	perTarget := make([]map[int32]int64, targetN)
	for t := range targetN {
		perTarget[t], err = retry(ctx, s.log, failures, fmt.Sprintf("reading the tail of target partition %s/%d", dst, t), func() (map[int32]int64, error) {
			found, _, err := s.tgt.lastCopies(ctx, dst, t, s.Name, want)
			return found, err
		})
		if err != nil {
			return nil, err
		}
	}
	for _, p := range ps {
		copiedTo := map[int32]int64{}
		for t := range targetN {
			if o, ok := perTarget[t][p]; ok {
				copiedTo[t] = o
			}
		}
		from := edges[p]
		if len(copiedTo) > 0 {
			// A target partition without a copy of p has had none of p's
			// records yet: everything bound there is still to copy.
			from = starts[p]
			if len(copiedTo) == int(targetN) {
				from = -1
				for _, o := range copiedTo {
					if from < 0 || o+1 < from {
						from = o + 1
					}
				}
			}
		}
		part := newPartition(s.Name, topic, p, from)
		part.dstTopic, part.target, part.targetN, part.copiedTo = dst, -1, targetN, copiedTo
		why := "the target holds no copy of it"
		if len(copiedTo) > 0 {
			why = "right after its last copies in the target"
		}
		s.logResume(part, why)
		out[p] = part
	}
	return out, nil
}

func (s *source) logResume(part *partition, why string) {
	s.log.Info("resuming partition", "topic", part.topic, "partition", part.partition, "from", part.next, "why", why)
}

// offsets lists the start (Smallest) or end (Largest) offsets of topic's
// partitions in the source: where a partition without copies in the target
// starts.
func (s *source) offsets(ctx context.Context, topic string, edge consumer.Start) (map[int32]int64, error) {
	list := s.adm.ListStartOffsets
	if edge == consumer.Largest {
		list = s.adm.ListEndOffsets
	}
	offsets, err := list(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	var firstErr error
	offsets.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && firstErr == nil {
			firstErr = fmt.Errorf("listing offsets of %s/%d: %w", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out, firstErr
}

// partitionCount reads how many partitions topic has in the source.
func (s *source) partitionCount(ctx context.Context, topic string) (int32, error) {
	md, err := s.adm.Metadata(ctx, topic)
	if err != nil {
		return 0, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return 0, fmt.Errorf("metadata of %s: %v", topic, td.Err)
	}
	return int32(len(td.Partitions)), nil
}
