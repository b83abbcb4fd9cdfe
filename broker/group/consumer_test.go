package group

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// consumerHarness drives a coordinator's consumer groups by hand, with the
// topics given and a clock the test moves.
func consumerHarness(t *testing.T, topics ...TopicInfo) *harness {
	return newHarness(t, Config{
		ConsumerSessionTimeout:    10 * time.Second,
		ConsumerHeartbeatInterval: time.Second,
		ConsumerMaxSize:           3,
		Topics:                    func() []TopicInfo { return topics },
	})
}

func ptr[T any](v T) *T { return &v }

func (h *harness) hb(id string, epoch int32, owned []TopicPartition, edit ...func(*ConsumerHeartbeat)) ConsumerHeartbeatResult {
	r := ConsumerHeartbeat{Group: "g", MemberID: id, MemberEpoch: epoch, ClientID: "client", Owned: owned}
	if epoch == 0 {
		r.SubscribedTopics, r.RebalanceTimeout = []string{"t"}, 30*time.Second
	}
	for _, e := range edit {
		e(&r)
	}
	return h.c.ConsumerHeartbeat(r)
}

// checkExclusive fails when a partition is held (assigned or still being
// revoked) by two members: the one thing reconciliation must never allow.
func (h *harness) checkExclusive() {
	h.t.Helper()
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	held := map[TopicPartition]string{}
	for _, m := range h.c.consumers["g"].members {
		for _, s := range []tpSet{m.assigned, m.revoking} {
			for tp := range s {
				if o, ok := held[tp]; ok {
					h.t.Fatalf("%v held by %s and %s", tp, o, m.id)
				}
				held[tp] = m.id
			}
		}
	}
}

func tps(topic string, ps ...int32) []TopicPartition {
	out := []TopicPartition{}
	for _, p := range ps {
		out = append(out, TopicPartition{Topic: topic, Partition: p})
	}
	return out
}

// A second member gets partitions only after the first one's heartbeat
// shows it gave them up; the first keeps its epoch until then.
func TestConsumerRevocationFirst(t *testing.T) {
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 4})
	a := h.hb("a", 0, []TopicPartition{})
	if a.Err != nil || len(a.Assignment) != 4 {
		t.Fatalf("first member: %+v, want every partition", a)
	}
	b := h.hb("b", 0, []TopicPartition{})
	h.checkExclusive()
	if b.Err != nil || len(b.Assignment) != 0 || b.MemberEpoch <= a.MemberEpoch {
		t.Fatalf("second member: %+v; want nothing yet, at the new epoch", b)
	}
	a2 := h.hb("a", a.MemberEpoch, a.Assignment)
	h.checkExclusive()
	if a2.Err != nil || len(a2.Assignment) != 2 || a2.MemberEpoch != a.MemberEpoch {
		t.Fatalf("first member told to revoke: %+v; want 2 partitions at its old epoch %d", a2, a.MemberEpoch)
	}
	if b2 := h.hb("b", b.MemberEpoch, []TopicPartition{}); len(b2.Assignment) != 0 {
		t.Fatalf("second member got %v before the first revoked", b2.Assignment)
	}
	a3 := h.hb("a", a2.MemberEpoch, a2.Assignment) // revoked
	if a3.Err != nil || a3.MemberEpoch != b.MemberEpoch {
		t.Fatalf("after revoking: %+v; want epoch %d", a3, b.MemberEpoch)
	}
	b3 := h.hb("b", b.MemberEpoch, []TopicPartition{})
	h.checkExclusive()
	if len(b3.Assignment) != 2 {
		t.Fatalf("second member after the release: %+v; want 2 partitions", b3)
	}
	d, err, _ := h.c.DescribeConsumer("g")
	if err != nil || d.State != "Stable" || d.Assignor != AssignorUniform {
		t.Fatalf("describe: %+v %v; want Stable, uniform", d, err)
	}

	// a leaves: b takes everything, at once (nothing to revoke).
	if r := h.hb("a", -1, nil); r.Err != nil || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	if b4 := h.hb("b", b.MemberEpoch, b3.Assignment); len(b4.Assignment) != 4 || b4.MemberEpoch <= b.MemberEpoch {
		t.Fatalf("after a left: %+v; want 4 partitions at a new epoch", b4)
	}
}

// Lying, stale and malformed heartbeats get Kafka's errors with a reason;
// a fenced member is removed, and no bound can be exceeded.
func TestConsumerHostileHeartbeats(t *testing.T) {
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 2})
	a := h.hb("a", 0, []TopicPartition{})
	many := make([]string, maxSubscribedTopics+1)
	for i := range many {
		many[i] = fmt.Sprintf("t%d", i)
	}
	long := make([]string, 2000)
	for i := range long {
		long[i] = fmt.Sprintf("%0240d", i)
	}
	for _, tc := range []struct {
		name string
		id   string
		ep   int32
		edit func(*ConsumerHeartbeat)
		want *kerr.Error
	}{
		{"epoch from the future", "a", a.MemberEpoch + 100, nil, kerr.FencedMemberEpoch},
		{"unknown member", "nobody", 5, nil, kerr.UnknownMemberID},
		{"epoch below -2", "a", -3, nil, kerr.InvalidRequest},
		{"epoch without member id", "", 3, nil, kerr.InvalidRequest},
		{"join without subscription", "x", 0, func(r *ConsumerHeartbeat) { r.SubscribedTopics = nil }, kerr.InvalidRequest},
		{"too many topics", "x", 0, func(r *ConsumerHeartbeat) { r.SubscribedTopics = many }, kerr.InvalidRequest},
		{"too many topic bytes", "x", 0, func(r *ConsumerHeartbeat) { r.SubscribedTopics = long }, kerr.InvalidRequest},
		{"huge member id", strings.Repeat("m", 300), 0, nil, kerr.InvalidRequest},
		{"bad regex", "x", 0, func(r *ConsumerHeartbeat) { r.SubscribedRegex = ptr("(") }, kerr.InvalidRegularExpression},
		{"huge regex", "x", 0, func(r *ConsumerHeartbeat) { r.SubscribedRegex = ptr(strings.Repeat("a", 2000)) }, kerr.InvalidRegularExpression},
		{"unknown assignor", "x", 0, func(r *ConsumerHeartbeat) { r.ServerAssignor = ptr("sticky") }, kerr.UnsupportedAssignor},
	} {
		var edits []func(*ConsumerHeartbeat)
		if tc.edit != nil {
			edits = append(edits, tc.edit)
		}
		r := h.hb(tc.id, tc.ep, nil, edits...)
		if r.Err != tc.want || r.Message == "" {
			t.Errorf("%s: %v %q, want %v with a reason", tc.name, r.Err, r.Message, tc.want)
		}
	}
	// The lying heartbeat fenced a: it is gone, and its old epoch too.
	if r := h.hb("a", a.MemberEpoch, nil); r.Err != kerr.UnknownMemberID {
		t.Errorf("fenced member's next heartbeat: %v, want UNKNOWN_MEMBER_ID", r.Err)
	}
	// The group holds at most ConsumerMaxSize members.
	for i := 0; i < 3; i++ {
		h.hb(fmt.Sprintf("m%d", i), 0, []TopicPartition{})
	}
	if r := h.hb("m3", 0, []TopicPartition{}); r.Err != kerr.GroupMaxSizeReached {
		t.Errorf("fourth member: %v, want GROUP_MAX_SIZE_REACHED", r.Err)
	}
}

// A member that does not revoke within its rebalance timeout is removed,
// though it heartbeats; one that stops heartbeating, after the session
// timeout; a group left without members leaves memory.
func TestConsumerTimeouts(t *testing.T) {
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 2})
	a := h.hb("a", 0, []TopicPartition{}, func(r *ConsumerHeartbeat) { r.RebalanceTimeout = 5 * time.Second })
	b := h.hb("b", 0, []TopicPartition{})
	h.hb("a", a.MemberEpoch, a.Assignment) // told to revoke one
	for i := 0; i < 4; i++ {
		h.advance(time.Second)
		h.hb("a", a.MemberEpoch, a.Assignment) // alive, but still owning it
	}
	if h.c.consumers["g"].members["a"] == nil {
		t.Fatal("a removed before its rebalance timeout")
	}
	h.advance(2 * time.Second)
	if h.c.consumers["g"].members["a"] != nil {
		t.Fatal("a still a member after its rebalance timeout passed without revoking")
	}
	r := h.hb("b", b.MemberEpoch, []TopicPartition{})
	if r.Err != nil || len(r.Assignment) != 2 {
		t.Fatalf("b after a was removed: %+v; want both partitions", r)
	}
	h.advance(11 * time.Second)
	if _, ok := h.c.consumers["g"]; ok {
		t.Fatal("b outlived its session timeout, or an empty group stayed in memory")
	}
}

// A static member that leaves with -2 comes back to its own partitions
// without a rebalance; another member with its instance id while it is
// live is refused.
func TestConsumerStaticMember(t *testing.T) {
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 2})
	inst := func(r *ConsumerHeartbeat) { r.InstanceID = ptr("i-1") }
	a := h.hb("a", 0, []TopicPartition{}, inst)
	if r := h.hb("a2", 0, []TopicPartition{}, inst); r.Err != kerr.UnreleasedInstanceID {
		t.Fatalf("second member with a live instance id: %v, want UNRELEASED_INSTANCE_ID", r.Err)
	}
	h.hb("a", -2, nil, inst)
	epoch := h.c.consumers["g"].epoch
	back := h.hb("a2", 0, []TopicPartition{}, inst)
	if back.Err != nil || len(back.Assignment) != 2 || back.MemberEpoch != a.MemberEpoch || h.c.consumers["g"].epoch != epoch {
		t.Fatalf("static member back: %+v (group epoch %d, was %d); want its 2 partitions at epoch %d, no rebalance",
			back, h.c.consumers["g"].epoch, epoch, a.MemberEpoch)
	}
}

// With migration disabled, a group is classic or consumer while it has
// members; an empty one may change. Commits into a consumer group check
// the member epoch.
func TestConsumerGroupProtocolsDoNotMix(t *testing.T) {
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 1})
	h.c.cfg.MigrationPolicy = MigrationDisabled
	a := h.hb("a", 0, []TopicPartition{})
	if r := got(t, h.join("", protocols("range")...)); r.Err != kerr.InconsistentGroupProtocol {
		t.Fatalf("classic join into a consumer group: %v, want INCONSISTENT_GROUP_PROTOCOL", r.Err)
	}
	commit := func(id string, epoch int32) *kerr.Error {
		return h.c.Commit(CommitRequest{Group: "g", MemberID: id, Generation: epoch,
			Offsets: map[TopicPartition]Offset{{Topic: "t", Partition: 0}: {Offset: 5}}})
	}
	if err := commit("a", a.MemberEpoch+1); err != kerr.StaleMemberEpoch {
		t.Errorf("commit at a wrong epoch: %v, want STALE_MEMBER_EPOCH", err)
	}
	if err := commit("zz", a.MemberEpoch); err != kerr.UnknownMemberID {
		t.Errorf("commit of an unknown member: %v, want UNKNOWN_MEMBER_ID", err)
	}
	if err := commit("", -1); err != kerr.UnknownMemberID {
		t.Errorf("commit from outside a live group: %v, want UNKNOWN_MEMBER_ID", err)
	}
	if err := commit("a", a.MemberEpoch); err != nil {
		t.Errorf("commit at the member's epoch: %v", err)
	}
	if _, err := h.c.FetchAs("g", ptr("a"), a.MemberEpoch+7); err != kerr.StaleMemberEpoch {
		t.Errorf("fetch at a wrong epoch: %v, want STALE_MEMBER_EPOCH", err)
	}
	if _, err := h.c.Describe("g"); err != kerr.GroupIDNotFound {
		t.Errorf("classic describe of a live consumer group: %v, want GROUP_ID_NOT_FOUND", err)
	}
	if err := h.c.Delete("g"); err != kerr.NonEmptyGroup {
		t.Errorf("delete of a live consumer group: %v, want NON_EMPTY_GROUP", err)
	}

	h.hb("a", -1, nil)
	h.advance(time.Second)
	if r := got(t, h.join("", protocols("range")...)); r.Err != nil {
		t.Fatalf("classic join after the consumer group emptied: %v", r.Err)
	}
	if r := h.hb("b", 0, []TopicPartition{}); r.Err != kerr.GroupIDNotFound || !strings.Contains(r.Message, "classic") {
		t.Fatalf("consumer heartbeat into a classic group: %v %q, want GROUP_ID_NOT_FOUND saying why", r.Err, r.Message)
	}
}

// Regex subscriptions match topics (internal ones never), and a topic
// created later joins the assignment.
func TestConsumerRegexSubscription(t *testing.T) {
	topics := []TopicInfo{{Name: "_logs-internal", Partitions: 1, Internal: true}, {Name: "logs-a", Partitions: 1}, {Name: "metrics", Partitions: 1}, {Name: "old-logs-a", Partitions: 1}}
	h := newHarness(t, Config{Topics: func() []TopicInfo { return topics }})
	r := h.hb("a", 0, []TopicPartition{}, func(r *ConsumerHeartbeat) { r.SubscribedTopics, r.SubscribedRegex = nil, ptr("logs-.*|metrics") })
	if want := tps("logs-a", 0); r.Err != nil || fmt.Sprint(r.Assignment) != fmt.Sprint(append(want, tps("metrics", 0)...)) {
		t.Fatalf("regex logs-.*|metrics: %+v; want logs-a and metrics (not internal, not old-logs-a)", r)
	}
	topics = []TopicInfo{topics[0], topics[1], {Name: "logs-b", Partitions: 2}, topics[2], topics[3]} // sorted by name, as Metadata lists them
	h.now = h.now.Add(topicCheckInterval)
	// The target is computed again at most every assignDutyCycle times
	// the last computation's wall time (refreshTarget): on a loaded
	// machine the first heartbeat may come before it is.
	epoch, owned := r.MemberEpoch, r.Assignment
	var r2 ConsumerHeartbeatResult
	for deadline := time.Now().Add(10 * time.Second); len(owned) != 4 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if r2 = h.hb("a", epoch, owned); r2.Err != nil {
			t.Fatalf("after logs-b was created: %+v", r2)
		}
		if epoch = r2.MemberEpoch; r2.Assignment != nil {
			owned = r2.Assignment
		}
	}
	if len(owned) != 4 || epoch <= r.MemberEpoch {
		t.Fatalf("after logs-b was created: %+v, owning %v; want 4 partitions at a new epoch", r2, owned)
	}
}

// A costly target computation is not repeated at once: a member joining
// right after one waits (with nothing), and gets its partitions at a
// heartbeat once the duty cycle allows.
func TestConsumerAssignmentThrottle(t *testing.T) {
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 2})
	a := h.hb("a", 0, []TopicPartition{})
	g := h.c.consumers["g"]
	g.assignCost, g.assignedAt = 20*time.Millisecond, time.Now() // as if it had taken 20ms
	b := h.hb("b", 0, []TopicPartition{})
	if g.targetEpoch == g.epoch || len(b.Assignment) != 0 {
		t.Fatalf("target computed again within the duty cycle: %+v", b)
	}
	time.Sleep(assignDutyCycle * 20 * time.Millisecond)
	h.hb("a", a.MemberEpoch, a.Assignment)
	if g.targetEpoch != g.epoch || len(g.target["b"]) != 1 {
		t.Fatalf("target not computed after the duty cycle: epoch %d, target epoch %d, %v", g.epoch, g.targetEpoch, g.target)
	}
}
