package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CommitRequest is an OffsetCommit. A request with generation -1, no member
// id and no instance id is a commit from outside group management (a tool
// resetting offsets, a consumer assigning partitions itself); it is accepted
// only while the group has no members, so it cannot move a live group.
type CommitRequest struct {
	Group      string
	MemberID   string
	InstanceID *string
	Generation int32
	Offsets    map[TopicPartition]Offset
}

// Commit checks that the committer belongs to the group's current generation
// and stores the offsets; it returns once they are durable. Commits are
// accepted during PreparingRebalance, which is when members commit what they
// consumed before giving their partitions up.
func (c *Coordinator) Commit(r CommitRequest) *kerr.Error {
	if err := c.admitCommit(r); err != nil {
		return err
	}
	if len(r.Offsets) == 0 {
		return nil
	}
	if err := c.store.Commit(r.Group, r.Offsets); err != nil {
		if errors.Is(err, ErrInvalidGroup) {
			return kerr.InvalidGroupID
		}
		c.log.Error("storing committed offsets", "group", r.Group, "partitions", len(r.Offsets), "err", err)
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

func (c *Coordinator) admitCommit(r CommitRequest) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(r.Group); err != nil {
		return err
	}
	if cg := c.consumers[r.Group]; cg != nil {
		return c.admitConsumerCommit(cg, r)
	}
	g := c.groups[r.Group]
	if r.Generation < 0 && r.MemberID == "" && r.InstanceID == nil {
		if g != nil && len(g.members) > 0 {
			return kerr.UnknownMemberID
		}
		return nil
	}
	if g == nil {
		if r.Generation >= 0 {
			// From a generation this coordinator never saw (it restarted,
			// or took the group over): the member must join again.
			return kerr.IllegalGeneration
		}
		return kerr.UnknownMemberID
	}
	m, err := g.lookup(r.MemberID, r.InstanceID)
	if err != nil {
		return err
	}
	if !g.generationOK(m, r.Generation) {
		return kerr.IllegalGeneration
	}
	if g.state == CompletingRebalance {
		// The member has its new generation but not its assignment yet.
		return kerr.RebalanceInProgress
	}
	m.lastSeen = c.now()
	return nil
}

// Fetch returns the group's committed offsets.
func (c *Coordinator) Fetch(group string) (map[TopicPartition]Offset, *kerr.Error) {
	return c.FetchAs(group, nil, -1)
}

// FetchAs is Fetch for a member that names itself (OffsetFetch v9): in a
// consumer-protocol group it must be a member at its current epoch
// (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH), so that a fenced member does not
// read offsets it no longer owns. Classic groups are not checked, as Kafka.
func (c *Coordinator) FetchAs(group string, memberID *string, epoch int32) (map[TopicPartition]Offset, *kerr.Error) {
	c.mu.Lock()
	err := c.check(group)
	if cg := c.consumers[group]; err == nil && cg != nil && memberID != nil && *memberID != "" {
		switch m := cg.members[*memberID]; {
		case m == nil:
			err = kerr.UnknownMemberID
		case m.classic != nil: // classic members are not checked, as in classic groups
		case epoch != m.epoch && epoch != m.prevEpoch:
			err = kerr.StaleMemberEpoch
		}
	}
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	offsets, serr := c.store.Load(group)
	if serr != nil {
		c.log.Error("reading committed offsets", "group", group, "err", serr)
		return nil, kerr.CoordinatorNotAvailable
	}
	return offsets, nil
}
