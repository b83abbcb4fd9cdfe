package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// JoinRequest is a JoinGroup, independent of its wire version.
type JoinRequest struct {
	Group            string
	MemberID         string  // "" on a member's first join
	InstanceID       *string // static membership (v5+)
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration // v0 has none: the session timeout is used
	ProtocolType     string
	Protocols        []Protocol
	// RequireKnownMember answers a dynamic member's first join with
	// MEMBER_ID_REQUIRED and the id to rejoin with (v4+, KIP-394), so that a
	// client that gives up mid-join does not leave a member behind.
	RequireKnownMember bool
}

// JoinResult answers a JoinGroup. Only the leader gets Members.
type JoinResult struct {
	Err          *kerr.Error
	Generation   int32
	ProtocolType string
	Protocol     string
	Leader       string
	MemberID     string
	Members      []JoinMember
}

// JoinMember is a member as the leader sees it: its metadata for the chosen
// protocol, from which the leader computes the assignment.
type JoinMember struct {
	ID         string
	InstanceID *string
	Metadata   []byte
}

// Join adds a member to a group or takes it into the next generation. The
// result comes when the rebalance ends, or at once for an error or when the
// member's join changes nothing.
func (c *Coordinator) Join(r JoinRequest) <-chan JoinResult { return answerOrWait(c, r, c.join) }

// answerOrWait runs handle under the coordinator's lock and returns the
// channel its answer comes on: at once, or, when handle says to wait, once
// the rebalance it parked the channel with answers it (Join and Sync).
func answerOrWait[Req, Res any](c *Coordinator, r Req, handle func(Req, chan Res) (Res, bool)) <-chan Res {
	ch := make(chan Res, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if res, wait := handle(r, ch); !wait {
		ch <- res
	}
	return ch
}

func (c *Coordinator) join(r JoinRequest, ch chan JoinResult) (JoinResult, bool) {
	fail := func(err *kerr.Error) (JoinResult, bool) {
		return JoinResult{Err: err, MemberID: r.MemberID, Generation: -1}, false
	}
	if err := c.check(r.Group); err != nil {
		return fail(err)
	}
	if r.SessionTimeout < c.cfg.MinSessionTimeout || r.SessionTimeout > c.cfg.MaxSessionTimeout {
		return fail(kerr.InvalidSessionTimeout)
	}
	if r.ProtocolType == "" || len(r.Protocols) == 0 {
		return fail(kerr.InconsistentGroupProtocol)
	}
	if r.RebalanceTimeout <= 0 {
		r.RebalanceTimeout = r.SessionTimeout
	}
	if c.isConsumerGroupLocked(r.Group) {
		return c.classicJoin(c.consumers[r.Group], r), false
	}
	delete(c.consumers, r.Group) // without members: the classic protocol may take it
	now := c.now()
	g := c.groups[r.Group]
	if g == nil {
		if r.MemberID != "" {
			return fail(kerr.UnknownMemberID)
		}
		g = newGroup(r.Group)
		c.groups[r.Group] = g
	}
	if !g.accepts(r.MemberID, r.ProtocolType, r.Protocols) {
		c.log.Info("refusing a member whose protocols the group does not share",
			"group", r.Group, "protocol_type", r.ProtocolType, "group_protocol_type", g.protocolType, "client", r.ClientID)
		return fail(kerr.InconsistentGroupProtocol)
	}
	if r.MemberID == "" {
		return c.joinNew(g, r, ch, now)
	}
	return c.joinKnown(g, r, ch, now)
}

func (c *Coordinator) joinNew(g *group, r JoinRequest, ch chan JoinResult, now time.Time) (JoinResult, bool) {
	if r.InstanceID != nil {
		// A static member that restarted: the new member takes the place of
		// the old one, whose requests are fenced from now on. Kafka skips
		// the rebalance when nothing changed; we rebalance, which is
		// correct and costs one round.
		if old := g.members[g.instances[*r.InstanceID]]; old != nil {
			c.log.Info("static member rejoined; fencing its previous member id", "group", g.name,
				"instance", *r.InstanceID, "previous", old.id)
			if old.join != nil {
				old.join <- JoinResult{Err: kerr.FencedInstanceID, MemberID: old.id, Generation: -1}
				old.join = nil
			}
			if old.sync != nil {
				old.sync <- SyncResult{Err: kerr.FencedInstanceID}
				old.sync = nil
			}
			g.deleteMember(old)
		}
		return c.addMember(g, r, newMemberID(r.ClientID), ch, now)
	}
	if r.RequireKnownMember {
		id := newMemberID(r.ClientID)
		g.pending[id] = now.Add(r.SessionTimeout)
		return JoinResult{Err: kerr.MemberIDRequired, MemberID: id, Generation: -1}, false
	}
	return c.addMember(g, r, newMemberID(r.ClientID), ch, now)
}

func (c *Coordinator) joinKnown(g *group, r JoinRequest, ch chan JoinResult, now time.Time) (JoinResult, bool) {
	if _, ok := g.pending[r.MemberID]; ok {
		delete(g.pending, r.MemberID)
		return c.addMember(g, r, r.MemberID, ch, now)
	}
	m, err := g.lookup(r.MemberID, r.InstanceID)
	if err != nil {
		return JoinResult{Err: err, MemberID: r.MemberID, Generation: -1}, false
	}
	m.lastSeen = now
	same := sameProtocols(m.protocols, r.Protocols)
	switch g.state {
	case PreparingRebalance:
		c.updateMember(m, r, ch)
		c.tryCompleteJoin(g, now)
		return JoinResult{}, true
	case CompletingRebalance:
		if same {
			// It lost our JoinGroup answer: give it again.
			return g.joinResult(m), false
		}
		c.updateMember(m, r, ch)
		c.prepareRebalance(g, now, "member "+m.id+" changed its protocols")
		c.tryCompleteJoin(g, now)
		return JoinResult{}, true
	case Stable:
		if same && m.id != g.leader {
			return g.joinResult(m), false
		}
		// A leader rejoins to have the group reassigned (its view of the
		// topics changed); anyone rejoins with new metadata for the same.
		c.updateMember(m, r, ch)
		c.prepareRebalance(g, now, "member "+m.id+" rejoined")
		c.tryCompleteJoin(g, now)
		return JoinResult{}, true
	}
	return JoinResult{Err: kerr.UnknownMemberID, MemberID: r.MemberID, Generation: -1}, false
}

func (c *Coordinator) addMember(g *group, r JoinRequest, id string, ch chan JoinResult, now time.Time) (JoinResult, bool) {
	g.seq++
	m := &member{
		id:         id,
		instanceID: r.InstanceID,
		seq:        g.seq,
		lastSeen:   now,
	}
	c.updateMember(m, r, ch)
	g.members[id] = m
	if r.InstanceID != nil {
		g.instances[*r.InstanceID] = id
	}
	if len(g.members) == 1 {
		g.protocolType = r.ProtocolType
	}
	c.log.Info("member joining group", "group", g.name, "member", id, "client", r.ClientID, "host", r.ClientHost,
		"session_timeout", r.SessionTimeout, "members", len(g.members))
	if g.state == PreparingRebalance && g.initial {
		g.deadline = minTime(now.Add(c.cfg.InitialRebalanceDelay), g.initialLimit)
	}
	c.prepareRebalance(g, now, "member "+id+" joined")
	c.tryCompleteJoin(g, now)
	return JoinResult{}, true
}

func (c *Coordinator) updateMember(m *member, r JoinRequest, ch chan JoinResult) {
	if m.join != nil {
		// A second JoinGroup while the first waits: the first one's
		// connection is most likely gone; answer it anyway.
		m.join <- JoinResult{Err: kerr.RebalanceInProgress, MemberID: m.id, Generation: -1}
	}
	m.join = ch
	m.clientID, m.clientHost = r.ClientID, r.ClientHost
	m.sessionTimeout, m.rebalanceTimeout = r.SessionTimeout, r.RebalanceTimeout
	m.protocols = r.Protocols
}

// prepareRebalance starts a rebalance: the members are asked (through
// REBALANCE_IN_PROGRESS on heartbeats and syncs) to join again, for as long
// as the longest rebalance timeout among them.
func (c *Coordinator) prepareRebalance(g *group, now time.Time, reason string) {
	if g.state == PreparingRebalance {
		return
	}
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			if m.sync != nil {
				m.sync <- SyncResult{Err: kerr.RebalanceInProgress}
				m.sync = nil
			}
		}
	}
	wasEmpty := g.state == Empty
	g.state = PreparingRebalance
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.rebalanceTimeout)
	}
	g.initial = wasEmpty && c.cfg.InitialRebalanceDelay > 0
	if g.initial {
		g.initialLimit = now.Add(timeout)
		g.deadline = minTime(now.Add(c.cfg.InitialRebalanceDelay), g.initialLimit)
	} else {
		g.deadline = now.Add(timeout)
	}
	c.log.Info("group rebalancing", "group", g.name, "reason", reason, "generation", g.generation, "members", len(g.members))
}

// tryCompleteJoin ends the join phase early once every member has rejoined.
func (c *Coordinator) tryCompleteJoin(g *group, now time.Time) {
	if g.state != PreparingRebalance || g.initial || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	c.completeJoin(g, now)
}

// completeJoin starts the next generation with the members that joined and
// answers their JoinGroups; the leader gets everyone's metadata to assign.
func (c *Coordinator) completeJoin(g *group, now time.Time) {
	g.initial = false
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = Empty, "", ""
		c.log.Info("group is empty", "group", g.name, "generation", g.generation)
		return
	}
	g.protocol = g.selectProtocol()
	if g.leader == "" {
		g.leader = g.sortedMembers()[0].id
	}
	g.state = CompletingRebalance
	for _, m := range g.members {
		m.lastSeen = now
		m.assignment = nil
		m.legacyGen = 0
		if m.join != nil {
			m.join <- g.joinResult(m)
			m.join = nil
		}
	}
	c.log.Info("group rebalanced", "group", g.name, "generation", g.generation, "protocol", g.protocol,
		"leader", g.leader, "members", len(g.members))
}

func (g *group) joinResult(m *member) JoinResult {
	res := JoinResult{
		Generation:   g.generation,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		Leader:       g.leader,
		MemberID:     m.id,
	}
	if m.id == g.leader {
		for _, o := range g.sortedMembers() {
			res.Members = append(res.Members, JoinMember{ID: o.id, InstanceID: o.instanceID, Metadata: o.metadata(g.protocol)})
		}
	}
	return res
}

// removeMember takes a member out (it left, or its session expired) and
// rebalances the others.
func (c *Coordinator) removeMember(g *group, m *member, now time.Time, reason string) {
	if m.join != nil {
		m.join <- JoinResult{Err: kerr.UnknownMemberID, MemberID: m.id, Generation: -1}
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- SyncResult{Err: kerr.UnknownMemberID}
		m.sync = nil
	}
	g.deleteMember(m)
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalance(g, now, reason)
		c.tryCompleteJoin(g, now)
	case PreparingRebalance:
		c.tryCompleteJoin(g, now)
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
