package group

// Online migration of a live group between the classic protocol and the
// consumer protocol (KIP-848), as Kafka 4 does under
// group.consumer.migration.policy, so that an application can be rolled
// member by member from group.protocol=classic to consumer and back
// without stopping.
//
//   - Upgrade: a ConsumerGroupHeartbeat joining a classic group with
//     members turns it into a consumer group. Each classic member keeps
//     what it owns (its last assignment, and the partitions its
//     subscription says it still owns) at an epoch equal to the classic
//     generation, so nothing moves until the new target is computed, and
//     then only through revocation first.
//   - Downgrade: when the last consumer-protocol member of a group whose
//     other members are classic leaves (or is removed), the group becomes
//     classic again and rebalances at once. Each member's requests at the
//     epoch it had are taken as the current generation until that
//     rebalance ends, so that it commits what it consumed before giving its
//     partitions up instead of being fenced (ILLEGAL_GENERATION would make
//     it drop them uncommitted).

import (
	"maps"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Migration policies (group.consumer.migration.policy).
const (
	MigrationBidirectional = "bidirectional" // upgrade and downgrade (Kafka 4's default)
	MigrationUpgrade       = "upgrade"       // classic to consumer only
	MigrationDowngrade     = "downgrade"     // consumer to classic only
	MigrationDisabled      = "disabled"      // neither: a group stays with the protocol it started with
)

// ValidMigrationPolicy reports whether p names a migration policy.
func ValidMigrationPolicy(p string) bool {
	switch p {
	case MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled:
		return true
	}
	return false
}

func (c *Coordinator) upgradeAllowed() bool {
	return c.cfg.MigrationPolicy == MigrationBidirectional || c.cfg.MigrationPolicy == MigrationUpgrade
}

func (c *Coordinator) downgradeAllowed() bool {
	return c.cfg.MigrationPolicy == MigrationBidirectional || c.cfg.MigrationPolicy == MigrationDowngrade
}

// upgrade converts a classic group with members into a consumer group, for
// a ConsumerGroupHeartbeat that joins it. It refuses (GROUP_ID_NOT_FOUND,
// which the consumer reports as "not a consumer group", with the reason)
// when the policy forbids it or the members' subscriptions cannot be read.
func (c *Coordinator) upgrade(g *group) (*cgroup, ConsumerHeartbeatResult, bool) {
	switch {
	case !c.upgradeAllowed():
		return nil, refuse(kerr.GroupIDNotFound, "group %q is a classic group with members, and converting live groups to the consumer protocol is disabled (--group-consumer-migration-policy=%s)", g.name, c.cfg.MigrationPolicy), true
	case g.protocolType != "consumer":
		return nil, refuse(kerr.GroupIDNotFound, "group %q is a classic group of protocol type %q, not of consumers: it cannot take a consumer-protocol member", g.name, g.protocolType), true
	case len(g.members) >= c.cfg.ConsumerMaxSize:
		return nil, refuse(kerr.GroupMaxSizeReached, "group %q has %d members, the most a consumer group may have", g.name, len(g.members)), true
	}
	now := c.now()
	cg := newCGroup(g.name)
	cg.epoch, cg.targetEpoch = g.generation, g.generation
	// Only partitions that exist are kept: what a leader or a member wrote
	// is bounded by the request size, not by the cluster, and a partition
	// that does not exist is not consumed anyway.
	exists := map[string]int32{}
	for _, t := range c.cfg.Topics() {
		exists[t.Name] = t.Partitions
	}
	for _, m := range g.sortedMembers() {
		meta, ok := consumerMetadata(memberProtocolMetadata(g, m))
		if !ok {
			return nil, refuse(kerr.GroupIDNotFound, "group %q: member %q's subscription is not in the consumer protocol's format, so the group cannot be converted to the consumer protocol", g.name, m.id), true
		}
		owned := tpSet{}
		for _, tp := range append(assignmentPartitions(m.assignment), ownedPartitions(meta)...) {
			if tp.Partition >= 0 && tp.Partition < exists[tp.Topic] {
				owned[tp] = true
			}
		}
		topics := append([]string(nil), meta.Topics...)
		sort.Strings(topics)
		cm := &cmember{
			id: m.id, instanceID: m.instanceID, rackID: meta.Rack, clientID: m.clientID, clientHost: m.clientHost,
			epoch: g.generation, prevEpoch: g.generation, topics: dedupe(topics),
			rebalanceTimeout: m.rebalanceTimeout, assigned: owned, revoking: tpSet{}, lastSeen: now,
			classic: &classicMember{sessionTimeout: m.sessionTimeout, protocols: m.protocols},
		}
		cg.members[m.id] = cm
		if m.instanceID != nil {
			cg.instances[*m.instanceID] = m.id
		}
		cg.target[m.id] = maps.Clone(owned)
	}
	// Waiting JoinGroups and SyncGroups join again, into the consumer group.
	g.failWaiters(kerr.RebalanceInProgress)
	cg.checkedAt = now
	_, cg.fingerprint = c.subscribedTopics(cg)
	delete(c.groups, g.name)
	c.consumers[g.name] = cg
	c.log.Info("classic group converted to the consumer protocol: a member joined with ConsumerGroupHeartbeat",
		"group", g.name, "generation", g.generation, "classic_members", len(cg.members))
	return cg, ConsumerHeartbeatResult{}, false
}

// maybeDowngrade turns a consumer group whose members all speak the
// classic protocol back into a classic group, which then rebalances.
// Called after a consumer-protocol member left or was removed.
func (c *Coordinator) maybeDowngrade(g *cgroup) {
	if !c.downgradeAllowed() || len(g.members) == 0 {
		return
	}
	for _, m := range g.members {
		if m.classic == nil {
			return
		}
	}
	now := c.now()
	cg := newGroup(g.name)
	cg.generation, cg.protocolType, cg.state = g.epoch, "consumer", Stable
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := g.members[id]
		cg.seq++
		cm := &member{
			id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			sessionTimeout: m.classic.sessionTimeout, rebalanceTimeout: m.rebalanceTimeout,
			protocols: m.classic.protocols, seq: cg.seq, lastSeen: now, legacyGen: m.epoch,
		}
		cm.assignment = encodeAssignment(m.assigned, metadataVersion(m.classic.protocols))
		cg.members[id] = cm
		if m.instanceID != nil {
			cg.instances[*m.instanceID] = id
		}
	}
	cg.protocol = cg.selectProtocol()
	cg.leader = cg.sortedMembers()[0].id
	delete(c.consumers, g.name)
	c.groups[g.name] = cg
	c.log.Info("consumer group converted back to the classic protocol: its last consumer-protocol member left",
		"group", g.name, "generation", cg.generation, "members", len(cg.members))
	c.prepareRebalance(cg, now, "converted from the consumer protocol")
}

// generationOK reports whether a classic request's generation is the
// group's, or, until the rebalance that follows a downgrade ends, the epoch
// the member had in the consumer group.
func (g *group) generationOK(m *member, generation int32) bool {
	return generation == g.generation || m.legacyGen != 0 && generation == m.legacyGen
}

// memberProtocolMetadata is a classic member's subscription: its metadata
// for the group's protocol, or its first one's before a protocol is chosen
// (every protocol of a consumer carries the same subscription).
func memberProtocolMetadata(g *group, m *member) []byte {
	if g.protocol != "" {
		if md := m.metadata(g.protocol); md != nil {
			return md
		}
	}
	if len(m.protocols) > 0 {
		return m.protocols[0].Metadata
	}
	return nil
}

// consumerMetadata reads a consumer's subscription (ConsumerProtocol
// subscription, any version).
func consumerMetadata(b []byte) (kmsg.ConsumerMemberMetadata, bool) {
	var meta kmsg.ConsumerMemberMetadata
	if len(b) < 2 || meta.ReadFrom(b) != nil {
		return meta, false
	}
	return meta, true
}

// ownedPartitions lists what a subscription says its member still owns
// (version 1 on; version 0 members own nothing when they join).
func ownedPartitions(meta kmsg.ConsumerMemberMetadata) []TopicPartition {
	var out []TopicPartition
	for _, t := range meta.OwnedPartitions {
		for _, p := range t.Partitions {
			out = append(out, TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return out
}

// assignmentPartitions reads a classic assignment; nil or unreadable bytes
// are no partitions.
func assignmentPartitions(b []byte) []TopicPartition {
	var a kmsg.ConsumerMemberAssignment
	if len(b) < 2 || a.ReadFrom(b) != nil {
		return nil
	}
	var out []TopicPartition
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			out = append(out, TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return out
}

// metadataVersion is the consumer protocol version a classic member speaks,
// which its assignment is written in (at most 3, the newest there is).
func metadataVersion(ps []Protocol) int16 {
	if len(ps) == 0 {
		return 0
	}
	meta, ok := consumerMetadata(ps[0].Metadata)
	if !ok || meta.Version < 0 {
		return 0
	}
	return min(meta.Version, 3)
}

// encodeAssignment writes partitions as a classic consumer's assignment.
func encodeAssignment(s tpSet, version int16) []byte {
	a := kmsg.ConsumerMemberAssignment{Version: version, Topics: []kmsg.ConsumerMemberAssignmentTopic{}}
	for _, run := range ByTopic(s.sorted()) {
		t := kmsg.ConsumerMemberAssignmentTopic{Topic: run[0].Topic}
		for _, tp := range run {
			t.Partitions = append(t.Partitions, tp.Partition)
		}
		a.Topics = append(a.Topics, t)
	}
	return a.AppendTo(nil)
}

// ByTopic splits partitions sorted by topic into one run per topic (the
// coordinator's assignments are sorted so; broker/groupapi gives each run
// its topic id).
func ByTopic(tps []TopicPartition) [][]TopicPartition {
	var out [][]TopicPartition
	for i := 0; i < len(tps); {
		j := i
		for j < len(tps) && tps[j].Topic == tps[i].Topic {
			j++
		}
		out = append(out, tps[i:j])
		i = j
	}
	return out
}
