package group

import (
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// tickConsumers removes consumer-protocol members whose session ended or
// that did not revoke within their rebalance timeout, and drops groups
// left without members (their offsets stay in the store) or no longer ours.
func (c *Coordinator) tickConsumers(now time.Time) {
	for name, g := range c.consumers {
		if !c.cfg.Owns(name) {
			c.log.Info("consumer group moved to another coordinator; dropping its members", "group", name, "members", len(g.members))
			delete(c.consumers, name)
			continue
		}
		removed := false
		for _, m := range g.members {
			why := ""
			switch {
			case m.classic != nil:
				why = classicExpired(m, now)
			case now.Sub(m.lastSeen) > c.cfg.ConsumerSessionTimeout:
				why = "session timeout of " + c.cfg.ConsumerSessionTimeout.String()
			}
			if why == "" && len(m.revoking) > 0 && now.After(m.revokeDeadline) {
				why = fmt.Sprintf("did not revoke %d partitions within its rebalance timeout of %v", len(m.revoking), m.rebalanceTimeout)
			}
			if why != "" {
				c.removeConsumer(g, m, why)
				removed = removed || m.classic == nil
			}
		}
		if len(g.members) == 0 {
			delete(c.consumers, name)
			c.markEmptiedLocked(name)
		} else if removed {
			c.maybeDowngrade(g)
		}
	}
}

// ConsumerDescription is a consumer-protocol group as
// ConsumerGroupDescribe shows it.
type ConsumerDescription struct {
	Name        string
	State       string
	Epoch       int32
	TargetEpoch int32
	Assignor    string
	Members     []ConsumerMemberDescription
}

// ConsumerMemberDescription is one member: what it owns now and what the
// target gives it.
type ConsumerMemberDescription struct {
	ID         string
	InstanceID *string
	RackID     *string
	Epoch      int32
	ClientID   string
	ClientHost string
	Topics     []string
	Regex      string
	Assigned   []TopicPartition
	Target     []TopicPartition
	Classic    bool // it speaks the classic protocol (JoinGroup) in this consumer group
}

// DescribeConsumer describes a consumer-protocol group. A group that is
// not one (classic, or only committed offsets) gets GROUP_ID_NOT_FOUND,
// which tells admin clients to describe it with DescribeGroups instead.
func (c *Coordinator) DescribeConsumer(name string) (ConsumerDescription, *kerr.Error, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(name); err != nil {
		return ConsumerDescription{}, err, ""
	}
	g := c.consumers[name]
	if g == nil {
		return ConsumerDescription{}, kerr.GroupIDNotFound, fmt.Sprintf("group %q is not a consumer-protocol group with members", name)
	}
	d := ConsumerDescription{Name: name, State: g.state(), Epoch: g.epoch, TargetEpoch: g.targetEpoch, Assignor: g.assignor}
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := g.members[id]
		d.Members = append(d.Members, ConsumerMemberDescription{
			ID: m.id, InstanceID: m.instanceID, RackID: m.rackID, Epoch: m.epoch,
			ClientID: m.clientID, ClientHost: m.clientHost, Topics: m.topics, Regex: m.regex,
			Assigned: m.assigned.sorted(), Target: g.target[id].sorted(), Classic: m.classic != nil,
		})
	}
	return d, nil, ""
}

// admitConsumerCommit checks a commit into a consumer-protocol group: the
// member must be in it, at its current epoch (or the one before, while the
// answer that moved it on may still be on its way), as Kafka's
// STALE_MEMBER_EPOCH rule. Commits from outside the group (epoch -1, no
// member) are taken only while it has no members, as for classic groups.
func (c *Coordinator) admitConsumerCommit(g *cgroup, r CommitRequest) *kerr.Error {
	if r.Generation < 0 && r.MemberID == "" && r.InstanceID == nil {
		if len(g.members) > 0 {
			return kerr.UnknownMemberID
		}
		return nil
	}
	m := g.members[r.MemberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if m.classic != nil {
		// A classic member commits at the generation its JoinGroup gave
		// it, which is its epoch: only the coordinator's answers move it.
		if r.Generation != m.epoch {
			return kerr.IllegalGeneration
		}
		m.lastSeen = c.now()
		return nil
	}
	if r.Generation != m.epoch && r.Generation != m.prevEpoch || r.Generation <= 0 {
		return kerr.StaleMemberEpoch
	}
	m.lastSeen = c.now()
	return nil
}

// isConsumerGroupLocked reports whether a classic request must be refused
// because the group is a consumer-protocol group with members.
func (c *Coordinator) isConsumerGroupLocked(name string) bool {
	g := c.consumers[name]
	return g != nil && len(g.members) > 0
}
