package group

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ConsumerHeartbeat joins (epoch 0), keeps alive, reconciles and removes
// (epoch -1; -2 for a static member that will come back) a member of a
// consumer-protocol group.
func (c *Coordinator) ConsumerHeartbeat(r ConsumerHeartbeat) ConsumerHeartbeatResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := c.consumerHeartbeat(r)
	res.HeartbeatInterval = c.cfg.ConsumerHeartbeatInterval
	return res
}

func refuse(err *kerr.Error, format string, args ...any) ConsumerHeartbeatResult {
	return ConsumerHeartbeatResult{Err: err, Message: fmt.Sprintf(format, args...), MemberEpoch: -1}
}

func (c *Coordinator) consumerHeartbeat(r ConsumerHeartbeat) ConsumerHeartbeatResult {
	if err := c.check(r.Group); err != nil {
		return ConsumerHeartbeatResult{Err: err, MemberEpoch: -1}
	}
	if res, bad := validHeartbeat(r); bad {
		return res
	}
	if cg := c.groups[r.Group]; cg != nil {
		switch {
		case len(cg.members) == 0:
			delete(c.groups, r.Group) // an empty classic group: its offsets stay, the consumer protocol takes it
		case r.MemberEpoch != 0:
			return refuse(kerr.UnknownMemberID, "member %q is not in group %q, a classic group: rejoin with epoch 0", r.MemberID, r.Group)
		default:
			if _, res, bad := c.upgrade(cg); bad {
				return res
			}
		}
	}
	now := c.now()
	g := c.consumers[r.Group]
	switch {
	case g == nil && r.MemberEpoch != 0:
		return refuse(kerr.UnknownMemberID, "member %q is not in group %q (the coordinator may have restarted): rejoin with epoch 0", r.MemberID, r.Group)
	case g == nil:
		g = newCGroup(r.Group)
		c.consumers[r.Group] = g
	}
	if r.MemberEpoch < 0 {
		return c.consumerLeave(g, r)
	}

	var m *cmember
	if r.MemberEpoch == 0 {
		var res ConsumerHeartbeatResult
		var bad bool
		if m, res, bad = c.consumerJoin(g, r); bad {
			return res
		}
	} else {
		m = g.members[r.MemberID]
		if m == nil {
			return refuse(kerr.UnknownMemberID, "member %q is not in group %q: rejoin with epoch 0", r.MemberID, r.Group)
		}
		if r.InstanceID != nil && g.instances[*r.InstanceID] != m.id {
			return refuse(kerr.FencedInstanceID, "instance id %q now belongs to another member of group %q", *r.InstanceID, r.Group)
		}
		if m.classic != nil {
			return refuse(kerr.UnknownMemberID, "member %q of group %q uses the classic protocol (JoinGroup); a new consumer-protocol member joins with epoch 0", r.MemberID, r.Group)
		}
		if !epochOK(m, r) {
			c.removeConsumer(g, m, fmt.Sprintf("heartbeat at epoch %d while the member is at %d", r.MemberEpoch, m.epoch))
			c.maybeDowngrade(g)
			return refuse(kerr.FencedMemberEpoch, "member epoch %d is not the member's current epoch %d in group %q: give up every partition and rejoin with epoch 0", r.MemberEpoch, m.epoch, r.Group)
		}
	}
	m.lastSeen, m.left = now, false
	if r.RackID != nil {
		m.rackID = r.RackID
	}
	if c.updateSubscription(g, m, r) {
		g.epoch++
	}
	c.refreshTarget(g)
	before, beforeEpoch := len(m.assigned), m.epoch
	changed := c.reconcile(g, m, r.Owned)
	res := ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch}
	if changed || r.MemberEpoch == 0 || before != len(m.assigned) || beforeEpoch != m.epoch || r.Owned != nil && !sameSet(r.Owned, m.assigned) {
		res.Assignment = m.assigned.sorted()
		if res.Assignment == nil {
			res.Assignment = []TopicPartition{}
		}
	}
	return res
}

// validHeartbeat refuses what no honest client sends, before any state is
// touched.
func validHeartbeat(r ConsumerHeartbeat) (ConsumerHeartbeatResult, bool) {
	switch {
	case r.MemberEpoch < -2:
		return refuse(kerr.InvalidRequest, "member epoch %d: a member sends its epoch, 0 to join, -1 to leave or -2 to leave as a static member", r.MemberEpoch), true
	case len(r.MemberID) > maxMemberIDBytes:
		return refuse(kerr.InvalidRequest, "member id of %d bytes: at most %d", len(r.MemberID), maxMemberIDBytes), true
	case r.MemberEpoch > 0 && r.MemberID == "":
		return refuse(kerr.InvalidRequest, "a heartbeat with epoch %d must name its member id", r.MemberEpoch), true
	case r.MemberEpoch == 0 && r.SubscribedTopics == nil && r.SubscribedRegex == nil:
		return refuse(kerr.InvalidRequest, "a member joining (epoch 0) must send its subscription"), true
	case r.MemberEpoch == 0 && r.RebalanceTimeout <= 0:
		return refuse(kerr.InvalidRequest, "a member joining (epoch 0) must send its rebalance timeout"), true
	case r.SubscribedRegex != nil && len(*r.SubscribedRegex) > maxRegexBytes:
		return refuse(kerr.InvalidRegularExpression, "subscription regex of %d bytes: at most %d", len(*r.SubscribedRegex), maxRegexBytes), true
	case r.ServerAssignor != nil && *r.ServerAssignor != AssignorUniform && *r.ServerAssignor != AssignorRange:
		return refuse(kerr.UnsupportedAssignor, "server assignor %q: Tributary serves %q (default) and %q", *r.ServerAssignor, AssignorUniform, AssignorRange), true
	}
	if res, bad := checkTopics(r.SubscribedTopics); bad {
		return res, true
	}
	if r.SubscribedRegex != nil && *r.SubscribedRegex != "" {
		if _, err := regexp.Compile(anchored(*r.SubscribedRegex)); err != nil {
			return refuse(kerr.InvalidRegularExpression, "subscription regex %q: %v", *r.SubscribedRegex, err), true
		}
	}
	return ConsumerHeartbeatResult{}, false
}

// checkTopics bounds a subscription by names.
func checkTopics(topics []string) (ConsumerHeartbeatResult, bool) {
	if len(topics) > maxSubscribedTopics {
		return refuse(kerr.InvalidRequest, "subscription of %d topics: at most %d", len(topics), maxSubscribedTopics), true
	}
	size := 0
	for _, t := range topics {
		if t == "" || len(t) > maxTopicNameBytes {
			return refuse(kerr.InvalidRequest, "subscribed topic name of %d bytes: names have 1 to %d", len(t), maxTopicNameBytes), true
		}
		size += len(t)
	}
	if size > maxSubscriptionBytes {
		return refuse(kerr.InvalidRequest, "subscription of %d bytes of topic names: at most %d", size, maxSubscriptionBytes), true
	}
	return ConsumerHeartbeatResult{}, false
}

// anchored makes a subscription regex match whole topic names, as Kafka's
// coordinator matches them ("logs" does not subscribe to "old-logs-2").
func anchored(re string) string { return "^(?:" + re + ")$" }

func compileSubscription(re string) *regexp.Regexp { return regexp.MustCompile(anchored(re)) }

// epochOK accepts the member's current epoch, or its previous one when the
// member owns nothing it was not told (the answer that moved it on was
// lost), as Kafka does.
func epochOK(m *cmember, r ConsumerHeartbeat) bool {
	if r.MemberEpoch == m.epoch {
		return true
	}
	if r.MemberEpoch != m.prevEpoch || r.Owned == nil {
		return false
	}
	for _, tp := range r.Owned {
		if !m.assigned[tp] && !m.revoking[tp] {
			return false
		}
	}
	return true
}

// consumerJoin adds the member of an epoch-0 heartbeat. A member id the
// group knows is rejoining: its old self is removed first (it gave up its
// partitions when it was fenced). A static member replaces the one that
// left with its instance id, keeping that member's assignment.
func (c *Coordinator) consumerJoin(g *cgroup, r ConsumerHeartbeat) (*cmember, ConsumerHeartbeatResult, bool) {
	id := r.MemberID
	if id == "" { // v0: the coordinator names the member
		id = newMemberID(r.ClientID)
	}
	if old := g.members[id]; old != nil {
		c.removeConsumer(g, old, "rejoined with epoch 0")
	}
	m := &cmember{id: id, instanceID: r.InstanceID, clientID: r.ClientID, clientHost: r.ClientHost,
		assigned: tpSet{}, revoking: tpSet{}, rebalanceTimeout: r.RebalanceTimeout}
	if r.InstanceID != nil {
		if prevID, ok := g.instances[*r.InstanceID]; ok {
			prev := g.members[prevID]
			if prev != nil && !prev.left {
				return nil, refuse(kerr.UnreleasedInstanceID, "instance id %q is still used by member %q of group %q; that member must leave first", *r.InstanceID, prevID, r.Group), true
			}
			if prev != nil { // take its place without a rebalance
				delete(g.members, prevID)
				m.epoch, m.prevEpoch, m.assigned, m.revoking = prev.epoch, prev.prevEpoch, prev.assigned, prev.revoking
				m.topics, m.regex, m.re, m.assignor = prev.topics, prev.regex, prev.re, prev.assignor
				g.target[id] = g.target[prevID]
				delete(g.target, prevID)
				g.members[id] = m
				g.instances[*r.InstanceID] = id
				c.log.Info("static consumer group member came back", "group", g.name, "member", id, "instance", *r.InstanceID)
				return m, ConsumerHeartbeatResult{}, false
			}
		}
		g.instances[*r.InstanceID] = id
	}
	if len(g.members) >= c.cfg.ConsumerMaxSize {
		return nil, refuse(kerr.GroupMaxSizeReached, "group %q has %d members, the most a consumer group may have", r.Group, len(g.members)), true
	}
	g.members[id] = m
	g.epoch++
	c.log.Info("member joined consumer group", "group", g.name, "member", id, "client", r.ClientID, "group_epoch", g.epoch)
	return m, ConsumerHeartbeatResult{}, false
}

// consumerLeave removes a member (epoch -1), or holds a static one's
// assignment until its session ends (epoch -2).
func (c *Coordinator) consumerLeave(g *cgroup, r ConsumerHeartbeat) ConsumerHeartbeatResult {
	id := r.MemberID
	if r.InstanceID != nil && id == "" {
		id = g.instances[*r.InstanceID]
	}
	m := g.members[id]
	if m == nil {
		return refuse(kerr.UnknownMemberID, "member %q is not in group %q", r.MemberID, r.Group)
	}
	if m.classic != nil {
		return refuse(kerr.UnknownMemberID, "member %q of group %q uses the classic protocol: it leaves with LeaveGroup", r.MemberID, r.Group)
	}
	if r.MemberEpoch == -2 && m.instanceID != nil {
		m.left, m.lastSeen = true, c.now()
		c.log.Info("static consumer group member left; its partitions wait for it until its session times out", "group", g.name, "member", m.id)
	} else {
		c.removeConsumer(g, m, "left the group")
		c.maybeDowngrade(g)
	}
	return ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: r.MemberEpoch}
}

// updateSubscription takes what the heartbeat changed and reports whether
// the target assignment must be computed again.
func (c *Coordinator) updateSubscription(g *cgroup, m *cmember, r ConsumerHeartbeat) bool {
	changed := false
	if r.SubscribedTopics != nil {
		topics := append([]string(nil), r.SubscribedTopics...)
		sort.Strings(topics)
		topics = dedupe(topics)
		if strings.Join(topics, "\x00") != strings.Join(m.topics, "\x00") {
			m.topics, changed = topics, true
		}
	}
	if r.SubscribedRegex != nil && *r.SubscribedRegex != m.regex {
		m.regex, m.re, changed = *r.SubscribedRegex, nil, true
		if m.regex != "" {
			m.re = compileSubscription(m.regex) // validHeartbeat compiled it
		}
	}
	if r.ServerAssignor != nil && *r.ServerAssignor != m.assignor {
		m.assignor, changed = *r.ServerAssignor, true
	}
	if r.RebalanceTimeout > 0 {
		m.rebalanceTimeout = r.RebalanceTimeout
	}
	return changed
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func sameSet(list []TopicPartition, set tpSet) bool {
	seen := tpSet{}
	for _, tp := range list {
		if !set[tp] {
			return false
		}
		seen[tp] = true
	}
	return len(seen) == len(set)
}

// subscribedTopics resolves every member's subscription against the
// cluster's topics: the topics the group assigns, and a fingerprint of
// their partition counts that changes when one is created, grows or goes.
func (c *Coordinator) subscribedTopics(g *cgroup) ([]TopicInfo, string) {
	var out []TopicInfo
	var fp strings.Builder
	for _, t := range c.cfg.Topics() {
		for _, m := range g.members {
			if m.subscribesTo(t) {
				out = append(out, t)
				fp.WriteString(t.Name + ":" + strconv.Itoa(int(t.Partitions)) + ",")
				break
			}
		}
	}
	return out, fp.String()
}

// refreshTarget computes the target assignment again when the group epoch
// moved past it. At most once a second it also looks whether the subscribed
// topics changed shape (created, grown, deleted), which bumps the epoch.
func (c *Coordinator) refreshTarget(g *cgroup) {
	if now := c.now(); g.checkedAt.IsZero() || now.Sub(g.checkedAt) >= topicCheckInterval {
		g.checkedAt = now
		if _, fp := c.subscribedTopics(g); fp != g.fingerprint {
			g.fingerprint = fp
			g.epoch++
		}
	}
	if g.targetEpoch == g.epoch {
		return
	}
	start := time.Now() // wall time: the cost is real CPU, whatever c.now says
	if g.assignCost > minThrottledAssign && start.Sub(g.assignedAt) < assignDutyCycle*g.assignCost {
		return
	}
	topics, fp := c.subscribedTopics(g)
	g.fingerprint = fp
	g.assignor = chooseAssignor(g)
	g.target = assign(g.assignor, g.members, topics, g.target)
	g.targetEpoch = g.epoch
	g.assignedAt, g.assignCost = start, time.Since(start)
	c.log.Info("consumer group target assignment computed", "group", g.name, "group_epoch", g.epoch,
		"assignor", g.assignor, "members", len(g.members), "topics", len(topics), "took", g.assignCost)
}

// chooseAssignor takes the assignor most members ask for, the default
// (uniform) when none asks; ties go to the name first in order.
func chooseAssignor(g *cgroup) string {
	votes := map[string]int{}
	for _, m := range g.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best, n := AssignorUniform, 0
	for _, a := range []string{AssignorRange, AssignorUniform} {
		if votes[a] > n {
			best, n = a, votes[a]
		}
	}
	return best
}

// reconcile moves a member one step towards its target: first it loses
// the partitions it must revoke (at its current epoch), then, once its
// heartbeat shows them released, it reaches the target epoch and gains the
// target partitions no other member still holds. It reports whether the
// member's assignment or epoch changed.
func (c *Coordinator) reconcile(g *cgroup, m *cmember, owned []TopicPartition) bool {
	if len(m.revoking) > 0 {
		if owned == nil {
			return false
		}
		for _, tp := range owned {
			if m.revoking[tp] {
				return false
			}
		}
		m.revoking = tpSet{}
	}
	target := g.target[m.id]
	changed := false
	if m.epoch != g.targetEpoch {
		revoke := tpSet{}
		for tp := range m.assigned {
			if !target[tp] {
				revoke[tp] = true
			}
		}
		if len(revoke) > 0 {
			for tp := range revoke {
				delete(m.assigned, tp)
			}
			m.revoking = revoke
			m.revokeDeadline = c.now().Add(m.rebalanceTimeout)
			return true
		}
		m.prevEpoch, m.epoch, changed = m.epoch, g.targetEpoch, true
	}
	var owners map[TopicPartition]string
	for tp := range target {
		if m.assigned[tp] {
			continue
		}
		if owners == nil {
			owners = g.owners()
		}
		if owners[tp] == "" {
			m.assigned[tp], changed = true, true
			owners[tp] = m.id
		}
	}
	return changed
}
