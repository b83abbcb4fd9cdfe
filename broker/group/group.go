package group

import (
	"bytes"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a group's place in the rebalance cycle, named as Kafka names it
// in DescribeGroups and ListGroups.
type State int

const (
	// Empty: no members (perhaps committed offsets).
	Empty State = iota
	// PreparingRebalance: waiting for the members to (re)join.
	PreparingRebalance
	// CompletingRebalance: joined; waiting for the leader's assignment.
	CompletingRebalance
	// Stable: every member has its assignment.
	Stable
	// Dead: the group does not exist.
	Dead
)

func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	}
	return "Dead"
}

// Protocol is one assignment protocol a member supports ("range",
// "cooperative-sticky", ...) with the member's metadata for it (usually its
// subscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

type member struct {
	id               string
	instanceID       *string // static membership (KIP-345)
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocols        []Protocol
	seq              uint64 // join order: the earliest member leads
	lastSeen         time.Time
	assignment       []byte
	// legacyGen is the epoch the member had in a consumer group that was
	// just converted back to classic: until the rebalance that follows
	// ends, its requests at that epoch count as the current generation.
	legacyGen int32

	join chan JoinResult // set while its JoinGroup waits for the rebalance
	sync chan SyncResult // set while its SyncGroup waits for the leader
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func sameProtocols(a, b []Protocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Metadata, b[i].Metadata) {
			return false
		}
	}
	return true
}

type group struct {
	name         string
	state        State
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	instances    map[string]string    // instance id -> member id
	pending      map[string]time.Time // member ids handed out with MEMBER_ID_REQUIRED -> expiry
	seq          uint64

	deadline     time.Time // end of the join phase of the current rebalance
	initial      bool      // in the initial delay of a new group
	initialLimit time.Time // the initial delay never extends past this
}

func newGroup(name string) *group {
	return &group{
		name:      name,
		members:   map[string]*member{},
		instances: map[string]string{},
		pending:   map[string]time.Time{},
	}
}

// sortedMembers lists members in join order.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

// candidates are the protocols every member except skip supports, in the
// preference order of the earliest member. nil means no constraint (no other
// members).
func (g *group) candidates(skip string) []string {
	var out []string
	first := true
	for _, m := range g.sortedMembers() {
		if m.id == skip {
			continue
		}
		if first {
			for _, p := range m.protocols {
				out = append(out, p.Name)
			}
			first = false
			continue
		}
		kept := out[:0]
		for _, name := range out {
			if hasProtocol(m.protocols, name) {
				kept = append(kept, name)
			}
		}
		out = kept
	}
	if first {
		return nil
	}
	return out
}

func hasProtocol(ps []Protocol, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

// accepts reports whether a member joining (or rejoining, id) with these
// protocols can be in the group: same protocol type, and at least one
// protocol every other member supports.
func (g *group) accepts(id, protocolType string, protocols []Protocol) bool {
	others := g.candidates(id)
	if others == nil {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, name := range others {
		if hasProtocol(protocols, name) {
			return true
		}
	}
	return false
}

// selectProtocol is Kafka's vote: each member votes for the protocol it
// prefers most among those all support; the most votes wins, ties going to
// the earliest member's preference.
func (g *group) selectProtocol() string {
	cands := g.candidates("")
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if contains(cands, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, name := range cands {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// deleteMember forgets a member without rebalancing; callers decide.
func (g *group) deleteMember(m *member) {
	delete(g.members, m.id)
	if m.instanceID != nil && g.instances[*m.instanceID] == m.id {
		delete(g.instances, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
	}
}

// failWaiters answers every waiting JoinGroup and SyncGroup with err.
func (g *group) failWaiters(err *kerr.Error) {
	for _, m := range g.members {
		if m.join != nil {
			m.join <- JoinResult{Err: err, MemberID: m.id}
			m.join = nil
		}
		if m.sync != nil {
			m.sync <- SyncResult{Err: err}
			m.sync = nil
		}
	}
}

// lookup finds the member a request speaks for, with Kafka's errors for a
// member that is unknown or whose static instance id now belongs to a newer
// member.
func (g *group) lookup(memberID string, instanceID *string) (*member, *kerr.Error) {
	if instanceID != nil {
		owner, ok := g.instances[*instanceID]
		if ok && owner != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	m := g.members[memberID]
	if m == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}
