package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// SyncRequest is a SyncGroup. Only the leader's carries Assignments.
type SyncRequest struct {
	Group        string
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string // v5+: checked against the group's when set
	Protocol     *string
	Assignments  map[string][]byte
}

// SyncResult answers a SyncGroup with the member's assignment.
type SyncResult struct {
	Err          *kerr.Error
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// Sync hands out assignments. Followers wait for the leader's SyncGroup; the
// leader's makes the group Stable and answers everyone.
func (c *Coordinator) Sync(r SyncRequest) <-chan SyncResult { return answerOrWait(c, r, c.sync) }

func (c *Coordinator) sync(r SyncRequest, ch chan SyncResult) (SyncResult, bool) {
	fail := func(err *kerr.Error) (SyncResult, bool) { return SyncResult{Err: err}, false }
	if err := c.check(r.Group); err != nil {
		return fail(err)
	}
	if cg := c.consumers[r.Group]; cg != nil {
		return c.classicSync(cg, r), false
	}
	g := c.groups[r.Group]
	if g == nil {
		return fail(kerr.UnknownMemberID)
	}
	m, err := g.lookup(r.MemberID, r.InstanceID)
	if err != nil {
		return fail(err)
	}
	if !g.generationOK(m, r.Generation) {
		return fail(kerr.IllegalGeneration)
	}
	if r.ProtocolType != nil && *r.ProtocolType != g.protocolType || r.Protocol != nil && *r.Protocol != g.protocol {
		return fail(kerr.InconsistentGroupProtocol)
	}
	m.lastSeen = c.now()
	switch g.state {
	case PreparingRebalance:
		return fail(kerr.RebalanceInProgress)
	case Stable:
		return g.syncResult(m), false
	case CompletingRebalance:
		if m.sync != nil {
			m.sync <- SyncResult{Err: kerr.RebalanceInProgress}
		}
		m.sync = ch
		if m.id != g.leader {
			return SyncResult{}, true
		}
		for id, o := range g.members {
			o.assignment = r.Assignments[id]
		}
		g.state = Stable
		for _, o := range g.members {
			if o.sync != nil {
				o.sync <- g.syncResult(o)
				o.sync = nil
			}
		}
		c.log.Info("group stable", "group", g.name, "generation", g.generation, "members", len(g.members))
		return SyncResult{}, true
	}
	return fail(kerr.UnknownMemberID)
}

func (g *group) syncResult(m *member) SyncResult {
	return SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}
}

// Heartbeat keeps a member's session alive and tells it, with
// REBALANCE_IN_PROGRESS, when it must join again.
func (c *Coordinator) Heartbeat(group, memberID string, instanceID *string, generation int32) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(group); err != nil {
		return err
	}
	if cg := c.consumers[group]; cg != nil {
		return c.classicHeartbeat(cg, memberID, instanceID, generation)
	}
	g := c.groups[group]
	if g == nil {
		return kerr.UnknownMemberID
	}
	m, err := g.lookup(memberID, instanceID)
	if err != nil {
		return err
	}
	if !g.generationOK(m, generation) {
		return kerr.IllegalGeneration
	}
	m.lastSeen = c.now()
	if g.state == PreparingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// LeaveMember names a member leaving: by member id, or by instance id alone
// for a static member (LeaveGroup v3+).
type LeaveMember struct {
	MemberID   string
	InstanceID *string
}

// Leave removes members at once (instead of at their session timeout) and
// rebalances the rest. It returns an error for the whole request, or one per
// member.
func (c *Coordinator) Leave(group string, members []LeaveMember) (*kerr.Error, []*kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(group); err != nil {
		return err, nil
	}
	if cg := c.consumers[group]; cg != nil {
		return nil, c.classicLeave(cg, members)
	}
	errs := make([]*kerr.Error, len(members))
	g := c.groups[group]
	now := c.now()
	for i, lm := range members {
		if g == nil {
			errs[i] = kerr.UnknownMemberID
			continue
		}
		id := lm.MemberID
		if id == "" && lm.InstanceID != nil {
			id = g.instances[*lm.InstanceID]
		}
		m, err := g.lookup(id, lm.InstanceID)
		if err != nil {
			errs[i] = err
			continue
		}
		c.log.Info("member left group", "group", group, "member", m.id, "client", m.clientID)
		c.removeMember(g, m, now, "member "+m.id+" left")
	}
	return nil, errs
}
