package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Consumer offsets follow the data: for the source consumer groups that
// Config.Groups selects, the mirror writes each group's committed offsets,
// translated to target offsets, into the target, so that a consumer that
// fails over to the analysis datacenter resumes at the same record. The
// translation reads the origin hops: a source offset c becomes the target
// offset right after the copy of the newest record below c, which is exact
// whatever the target holds besides (other sources, gaps). A translation is
// written only while the group has no members in the target, and only
// forward, so that a consumer already running there is never moved.
//
// Topics placed by key hash (different partition counts) are not
// translated: one target partition interleaves several source partitions,
// and no single target offset is right for all of them.

// syncGroups translates the selected groups' offsets once.
func (s *source) syncGroups(ctx context.Context) {
	if s.cfg.groups == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	listed, err := s.adm.ListGroups(ctx)
	if err != nil {
		s.log.Warn("listing the source's consumer groups; will retry", "err", err)
		return
	}
	for _, g := range listed.Groups() {
		if g == s.cfg.Group || !s.cfg.groups.MatchString(g) {
			continue
		}
		if err := s.syncGroup(ctx, g); err != nil && ctx.Err() == nil {
			s.events.failures.WithLabelValues("target").Inc()
			s.log.Warn("translating a consumer group's offsets; will retry", "group", g, "err", err)
		}
	}
}

func (s *source) syncGroup(ctx context.Context, group string) error {
	committed, err := s.adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("reading its offsets in the source: %w", err)
	}
	tadm := kadm.NewClient(s.tgt.client)
	described, err := tadm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("describing it in the target: %w", err)
	}
	if d, ok := described[group]; ok && len(d.Members) > 0 {
		return nil // consumers run in the target: theirs are the offsets
	}
	current, err := tadm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("reading its offsets in the target: %w", err)
	}
	out := kadm.Offsets{}
	var firstErr error
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil || o.At < 0 || !s.cfg.selects(o.Topic) || firstErr != nil {
			return
		}
		dst := s.cfg.targetTopic(s.Name, o.Topic)
		n, err := s.partitionCount(ctx, o.Topic)
		if err != nil {
			firstErr = err
			return
		}
		s.tgt.mu.Lock()
		targetN, known := s.tgt.counts[dst]
		s.tgt.mu.Unlock()
		if !known || targetN != n {
			return // not mirrored yet, or placed by key hash
		}
		t, found, err := s.tgt.copyBefore(ctx, dst, o.Partition, s.Name, o.Partition, o.At)
		if err != nil {
			firstErr = err
			return
		}
		if found {
			t++
		}
		if cur, ok := current.Lookup(dst, o.Partition); ok && cur.Err == nil && cur.At >= t {
			return // only forward
		}
		out.AddOffset(dst, o.Partition, t, -1)
	})
	if firstErr != nil {
		return firstErr
	}
	if len(out) == 0 {
		return nil
	}
	resp, err := tadm.CommitOffsets(ctx, group, out)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("committing translated offsets in the target: %w", err)
	}
	s.log.Debug("translated a consumer group's offsets into the target", "group", group)
	return nil
}
