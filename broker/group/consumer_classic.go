package group

// Classic members in a consumer group: a member that speaks JoinGroup,
// SyncGroup and Heartbeat in a group the consumer protocol runs, as Kafka
// 4 lets a group be rolled from one protocol to the other (migrate.go).
//
// The coordinator assigns such a member exactly as a consumer-protocol
// one, and the classic requests carry the reconciliation:
//   - JoinGroup is its heartbeat with owned partitions: what its
//     subscription says it still owns (nothing for an eager consumer, which
//     gave everything up before joining) is all it keeps, and it moves
//     towards its target as a consumer-protocol member does, revocation
//     first. The answer comes at once, with the member's epoch as the
//     generation and no leader, so the member only syncs.
//   - SyncGroup answers what it owns now, in the consumer protocol's
//     assignment format.
//   - Heartbeat answers REBALANCE_IN_PROGRESS when the member must join
//     again: the group epoch moved past it, it must confirm a revocation, or
//     every partition it waits for was released.
//   - A member told to rejoin that does not within its rebalance timeout,
//     or that does not sync within it after its JoinGroup was answered, is
//     removed, as is one silent for its session timeout.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

type classicMember struct {
	sessionTimeout time.Duration
	protocols      []Protocol
	rejoinBy       time.Time // told to join again; removed if it has not by then
	syncBy         time.Time // its JoinGroup was answered; removed if it has not synced by then
}

// protocol is the one the member is told the group uses: its first, which
// it prefers (every consumer protocol carries the same subscription).
func (m *classicMember) protocol() string { return m.protocols[0].Name }

func (m *classicMember) supports(name string) bool { return hasProtocol(m.protocols, name) }

// classicJoin handles a JoinGroup into a consumer group with members.
func (c *Coordinator) classicJoin(g *cgroup, r JoinRequest) JoinResult {
	fail := func(err *kerr.Error) JoinResult { return JoinResult{Err: err, MemberID: r.MemberID, Generation: -1} }
	now := c.now()
	m := g.members[r.MemberID]
	if r.InstanceID != nil {
		if owner, ok := g.instances[*r.InstanceID]; ok && owner != r.MemberID {
			if r.MemberID != "" {
				return fail(kerr.FencedInstanceID)
			}
			// A static member that restarted takes its old self's place;
			// the old one's partitions are reassigned.
			if old := g.members[owner]; old != nil {
				c.removeConsumer(g, old, "replaced by a restarted static member")
			}
		}
	}
	if m != nil && m.classic == nil {
		c.log.Info("refusing a JoinGroup from a member that uses the consumer protocol", "group", g.name, "member", m.id)
		return fail(kerr.UnknownMemberID)
	}
	if m == nil && c.cfg.MigrationPolicy == MigrationDisabled {
		// A new classic member would leave the group mixed for good.
		c.log.Info("refusing a classic member: the group uses the consumer protocol and migration is disabled", "group", g.name, "client", r.ClientID)
		return fail(kerr.InconsistentGroupProtocol)
	}
	if r.ProtocolType != "consumer" {
		c.log.Info("refusing a classic member of another protocol type into a consumer group", "group", g.name, "protocol_type", r.ProtocolType)
		return fail(kerr.InconsistentGroupProtocol)
	}
	meta, ok := consumerMetadata(r.Protocols[0].Metadata)
	if !ok {
		c.log.Info("refusing a classic member whose subscription cannot be read", "group", g.name, "client", r.ClientID)
		return fail(kerr.InconsistentGroupProtocol)
	}
	if res, bad := checkTopics(meta.Topics); bad {
		c.log.Info("refusing a classic member's subscription", "group", g.name, "client", r.ClientID, "reason", res.Message)
		return fail(kerr.InconsistentGroupProtocol)
	}
	for _, o := range g.members {
		if o.classic != nil && o.id != r.MemberID && !sharesProtocol(o.classic.protocols, r.Protocols) {
			c.log.Info("refusing a classic member that shares no protocol with the group's other classic members", "group", g.name, "client", r.ClientID)
			return fail(kerr.InconsistentGroupProtocol)
		}
	}
	if m == nil {
		id := r.MemberID
		if id == "" {
			id = newMemberID(r.ClientID)
			if r.RequireKnownMember && r.InstanceID == nil {
				return JoinResult{Err: kerr.MemberIDRequired, MemberID: id, Generation: -1}
			}
		}
		if len(g.members) >= c.cfg.ConsumerMaxSize {
			return fail(kerr.GroupMaxSizeReached)
		}
		m = &cmember{id: id, instanceID: r.InstanceID, assigned: tpSet{}, revoking: tpSet{}, classic: &classicMember{}}
		g.members[id] = m
		if r.InstanceID != nil {
			g.instances[*r.InstanceID] = id
		}
		g.epoch++
		c.log.Info("classic member joined consumer group", "group", g.name, "member", id, "client", r.ClientID, "group_epoch", g.epoch)
	}
	m.clientID, m.clientHost, m.lastSeen = r.ClientID, r.ClientHost, now
	m.classic.sessionTimeout, m.classic.protocols = r.SessionTimeout, r.Protocols
	m.classic.rejoinBy, m.classic.syncBy = time.Time{}, now.Add(r.RebalanceTimeout)
	if meta.Rack != nil {
		m.rackID = meta.Rack
	}
	topics := meta.Topics
	if topics == nil {
		topics = []string{}
	}
	if c.updateSubscription(g, m, ConsumerHeartbeat{SubscribedTopics: topics, RebalanceTimeout: r.RebalanceTimeout}) {
		g.epoch++
	}
	// What the member joins with is all it still owns: an eager consumer
	// gave everything up (and committed) before joining.
	owned := ownedPartitions(meta)
	if owned == nil {
		owned = []TopicPartition{}
	}
	still := tpSet{}
	for _, tp := range owned {
		if m.assigned[tp] {
			still[tp] = true
		}
	}
	m.assigned = still
	c.refreshTarget(g)
	c.reconcile(g, m, owned)
	return JoinResult{Generation: m.epoch, ProtocolType: "consumer", Protocol: m.classic.protocol(), MemberID: m.id}
}

func sharesProtocol(a, b []Protocol) bool {
	for _, p := range b {
		if hasProtocol(a, p.Name) {
			return true
		}
	}
	return false
}

// classicMemberOf finds the classic member a SyncGroup, Heartbeat or
// LeaveGroup speaks for.
func classicMemberOf(g *cgroup, memberID string, instanceID *string) (*cmember, *kerr.Error) {
	if instanceID != nil {
		if owner, ok := g.instances[*instanceID]; ok && owner != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	m := g.members[memberID]
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// classicSync answers a classic member's SyncGroup in a consumer group
// with what it owns now.
func (c *Coordinator) classicSync(g *cgroup, r SyncRequest) SyncResult {
	m, err := classicMemberOf(g, r.MemberID, r.InstanceID)
	switch {
	case err != nil:
		return SyncResult{Err: err}
	case r.Generation != m.epoch:
		return SyncResult{Err: kerr.IllegalGeneration}
	case r.ProtocolType != nil && *r.ProtocolType != "consumer" || r.Protocol != nil && !m.classic.supports(*r.Protocol):
		return SyncResult{Err: kerr.InconsistentGroupProtocol}
	}
	now := c.now()
	m.lastSeen = now
	if g.epoch > m.epoch && len(m.revoking) == 0 {
		// The group moved on since its JoinGroup: join again first. A
		// member still revoking syncs, to learn what to give up.
		c.askRejoin(m, now)
		return SyncResult{Err: kerr.RebalanceInProgress}
	}
	m.classic.syncBy = time.Time{}
	protocol := m.classic.protocol()
	if r.Protocol != nil {
		protocol = *r.Protocol
	}
	return SyncResult{ProtocolType: "consumer", Protocol: protocol, Assignment: encodeAssignment(m.assigned, metadataVersion(m.classic.protocols))}
}

// classicHeartbeat keeps a classic member of a consumer group alive and
// tells it when to join again.
func (c *Coordinator) classicHeartbeat(g *cgroup, memberID string, instanceID *string, generation int32) *kerr.Error {
	m, err := classicMemberOf(g, memberID, instanceID)
	if err != nil {
		return err
	}
	if generation != m.epoch {
		return kerr.IllegalGeneration
	}
	now := c.now()
	m.lastSeen = now
	c.refreshTarget(g)
	if m.epoch < g.epoch || len(m.revoking) > 0 || c.releasedAll(g, m) {
		c.askRejoin(m, now)
		return kerr.RebalanceInProgress
	}
	return nil
}

// releasedAll reports whether the member waits for partitions of its
// target and every one of them is free now: it joins again to take them
// in one go (each join costs an eager consumer everything it owns).
func (c *Coordinator) releasedAll(g *cgroup, m *cmember) bool {
	var owners map[TopicPartition]string
	waiting := false
	for tp := range g.target[m.id] {
		if m.assigned[tp] {
			continue
		}
		if owners == nil {
			owners = g.owners()
		}
		if owners[tp] != "" {
			return false
		}
		waiting = true
	}
	return waiting
}

func (c *Coordinator) askRejoin(m *cmember, now time.Time) {
	if m.classic.rejoinBy.IsZero() {
		m.classic.rejoinBy = now.Add(m.rebalanceTimeout)
	}
}

// classicLeave removes classic members from a consumer group (LeaveGroup).
func (c *Coordinator) classicLeave(g *cgroup, members []LeaveMember) []*kerr.Error {
	errs := make([]*kerr.Error, len(members))
	for i, lm := range members {
		id := lm.MemberID
		if id == "" && lm.InstanceID != nil {
			id = g.instances[*lm.InstanceID]
		}
		m, err := classicMemberOf(g, id, lm.InstanceID)
		if err != nil {
			errs[i] = err
			continue
		}
		c.removeConsumer(g, m, "left the group (LeaveGroup)")
	}
	return errs
}

// classicExpired says why a classic member of a consumer group must be
// removed at now, or "" if it need not.
func classicExpired(m *cmember, now time.Time) string {
	switch {
	case now.Sub(m.lastSeen) > m.classic.sessionTimeout:
		return "session timeout of " + m.classic.sessionTimeout.String()
	case !m.classic.rejoinBy.IsZero() && now.After(m.classic.rejoinBy):
		return "did not join again within its rebalance timeout of " + m.rebalanceTimeout.String()
	case !m.classic.syncBy.IsZero() && now.After(m.classic.syncBy):
		return "did not sync within its rebalance timeout of " + m.rebalanceTimeout.String()
	}
	return ""
}
