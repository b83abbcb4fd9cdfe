package group

// The consumer group protocol of KIP-848 (ConsumerGroupHeartbeat): the
// coordinator, not a client leader, assigns partitions.
//
// What the coordinator promises a consumer-protocol group:
//   - Every change of membership, subscription, assignor or of the
//     subscribed topics' partition counts bumps the group epoch, and a new
//     target assignment is computed for that epoch by the server-side
//     assignor (uniform by default, or range).
//   - A partition moves only after its old owner gave it up: a member first
//     loses the partitions it must revoke (at its old member epoch), reaches
//     the target epoch once its heartbeat shows it no longer owns them, and
//     receives a partition another member still holds only once that member
//     released it. No partition is ever told to two members at once.
//   - A heartbeat from an epoch the member is not at gets
//     FENCED_MEMBER_EPOCH and the member is removed (it rejoins with epoch
//     0); an unknown member gets UNKNOWN_MEMBER_ID. A member that does not
//     heartbeat within the session timeout, or does not revoke within its
//     rebalance timeout, is removed.
//   - A live classic group is converted to a consumer group when a member
//     joins it with ConsumerGroupHeartbeat, and a consumer group whose last
//     consumer-protocol member leaves goes back to classic, as Kafka 4's
//     group.consumer.migration.policy allows (migrate.go). Meanwhile classic
//     members (JoinGroup, SyncGroup) share the group with consumer-protocol
//     ones under the same reconciliation (consumer_classic.go). An empty
//     group (committed offsets only) may be taken by either protocol.
//
// Like classic membership, all of this lives in memory: after a restart
// members get UNKNOWN_MEMBER_ID and rejoin. Committed offsets are shared
// with classic groups, in the same store.

import (
	"regexp"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Bounds on what one heartbeat may ask for: a request past them is refused
// with INVALID_REQUEST, so that a hostile client cannot make the coordinator
// hold or scan unbounded state.
const (
	maxSubscribedTopics = 10000 // as many as the broker may have (--max-topics)
	maxRegexBytes       = 1024
	maxMemberIDBytes    = 255
	maxTopicNameBytes   = 249
	// maxSubscriptionBytes bounds the names of one member's subscription
	// together, so that a group of ConsumerMaxSize members holds at most
	// 256 MiB of them even when every member is hostile.
	maxSubscriptionBytes = 256 << 10
)

// topicCheckInterval is how often a group's subscribed topics are looked up
// again for created, grown or deleted topics when nothing else changed: a
// lookup scans every topic for every member, too much for each heartbeat.
const topicCheckInterval = time.Second

// A target computation that took more than minThrottledAssign is not
// repeated before assignDutyCycle times its cost has passed: a burst of
// joins into a group of 1,000 members over 20,000 partitions (~25 ms each)
// then costs a tenth of a core, not all of it. Members keep reconciling
// towards the previous target meanwhile and get the new one at a later
// heartbeat. Small groups (microseconds) are never held back.
const (
	minThrottledAssign = time.Millisecond
	assignDutyCycle    = 10
)

// Assignors served, by the name a client's ServerAssignor gives.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// TopicInfo is what an assignor needs to know of a topic.
type TopicInfo struct {
	Name       string
	Partitions int32
	Internal   bool // matched by name only, never by a regex
}

// ConsumerHeartbeat is a ConsumerGroupHeartbeat. Nil fields mean
// "unchanged since the last heartbeat", as on the wire.
type ConsumerHeartbeat struct {
	Group            string
	MemberID         string
	MemberEpoch      int32
	InstanceID       *string
	RackID           *string
	ClientID         string
	ClientHost       string
	RebalanceTimeout time.Duration // 0: unchanged
	SubscribedTopics []string      // nil: unchanged
	SubscribedRegex  *string       // nil: unchanged; "" clears it
	ServerAssignor   *string       // nil: unchanged
	// Owned lists the partitions the member owns; nil when it did not say
	// (unchanged since its last heartbeat).
	Owned []TopicPartition
}

// ConsumerHeartbeatResult answers a ConsumerHeartbeat. Assignment is set
// when the member must (re)learn what it owns; nil means unchanged.
type ConsumerHeartbeatResult struct {
	Err               *kerr.Error
	Message           string // why, for the client to show (may be empty)
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	Assignment        []TopicPartition
}

type tpSet map[TopicPartition]bool

func (s tpSet) sorted() []TopicPartition {
	out := make([]TopicPartition, 0, len(s))
	for tp := range s {
		out = append(out, tp)
	}
	sortTPs(out)
	return out
}

func sortTPs(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

type cmember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	epoch            int32
	prevEpoch        int32
	topics           []string
	regex            string
	re               *regexp.Regexp
	assignor         string
	rebalanceTimeout time.Duration
	assigned         tpSet // what it has been told it owns
	revoking         tpSet // told to give up, not yet confirmed by a heartbeat
	revokeDeadline   time.Time
	lastSeen         time.Time
	left             bool // a static member that left with epoch -2: held until its session ends
	// classic is set for a member that speaks the classic protocol
	// (JoinGroup, SyncGroup, Heartbeat) in a consumer group: one that was
	// in the group when it was upgraded, or joined it since.
	classic *classicMember
}

// subscribes reports whether the member subscribes to topic.
func (m *cmember) subscribes(topic string) bool {
	for _, t := range m.topics {
		if t == topic {
			return true
		}
	}
	return false
}

// subscribesTo is subscribes with the regex, which never matches an
// internal topic.
func (m *cmember) subscribesTo(t TopicInfo) bool {
	return m.re != nil && !t.Internal && m.re.MatchString(t.Name) || m.subscribes(t.Name)
}

type cgroup struct {
	name        string
	epoch       int32 // bumped on every change that needs a new target
	targetEpoch int32 // the epoch target was computed at
	assignor    string
	members     map[string]*cmember
	instances   map[string]string // instance id -> member id
	target      map[string]tpSet  // member id -> partitions
	fingerprint string            // the subscribed topics' partition counts target was computed from
	checkedAt   time.Time         // when fingerprint was last computed
	assignedAt  time.Time         // wall time of the last target computation
	assignCost  time.Duration     // what it took
}

func newCGroup(name string) *cgroup {
	return &cgroup{name: name, members: map[string]*cmember{}, instances: map[string]string{}, target: map[string]tpSet{}}
}

// owners maps every partition some member holds (assigned or still
// revoking) to that member.
func (g *cgroup) owners() map[TopicPartition]string {
	out := map[TopicPartition]string{}
	for _, m := range g.members {
		for tp := range m.assigned {
			out[tp] = m.id
		}
		for tp := range m.revoking {
			out[tp] = m.id
		}
	}
	return out
}

// removeMember drops a member and bumps the epoch so its partitions are
// assigned again.
func (c *Coordinator) removeConsumer(g *cgroup, m *cmember, reason string) {
	delete(g.members, m.id)
	if m.instanceID != nil && g.instances[*m.instanceID] == m.id {
		delete(g.instances, *m.instanceID)
	}
	delete(g.target, m.id)
	g.epoch++
	c.log.Info("consumer group member removed", "group", g.name, "member", m.id, "client", m.clientID,
		"reason", reason, "group_epoch", g.epoch)
}

// State names a consumer group's state as ConsumerGroupDescribe does.
func (g *cgroup) state() string {
	switch {
	case len(g.members) == 0:
		return "Empty"
	case g.targetEpoch < g.epoch:
		return "Assigning"
	}
	for _, m := range g.members {
		if m.epoch != g.targetEpoch || len(m.revoking) > 0 || len(m.assigned) != len(g.target[m.id]) {
			return "Reconciling"
		}
	}
	return "Stable"
}
