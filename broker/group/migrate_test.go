package group

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// subscription is a consumer's JoinGroup metadata (ConsumerProtocol
// subscription v1: topics and the partitions it still owns) under each
// protocol name.
func subscription(owned []TopicPartition, names ...string) []Protocol {
	meta := kmsg.ConsumerMemberMetadata{Version: 1, Topics: []string{"t"}}
	for _, run := range ByTopic(owned) {
		op := kmsg.ConsumerMemberMetadataOwnedPartition{Topic: run[0].Topic}
		for _, tp := range run {
			op.Partitions = append(op.Partitions, tp.Partition)
		}
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	var ps []Protocol
	for _, n := range names {
		ps = append(ps, Protocol{Name: n, Metadata: meta.AppendTo(nil)})
	}
	return ps
}

func (h *harness) classicJoin(id string, owned []TopicPartition) <-chan JoinResult {
	return h.c.Join(JoinRequest{Group: "g", MemberID: id, ClientID: "classic", SessionTimeout: session,
		RebalanceTimeout: 30 * time.Second, ProtocolType: "consumer", Protocols: subscription(owned, "range", "cooperative-sticky")})
}

// classicSync syncs a classic member and reads its assignment.
func (h *harness) classicSync(id string, gen int32) ([]TopicPartition, *kerr.Error) {
	r := got(h.t, h.sync(id, gen, nil))
	if r.Err != nil {
		return nil, r.Err
	}
	return assignmentPartitions(r.Assignment), nil
}

func (h *harness) commitAt(id string, gen int32) *kerr.Error {
	return h.c.Commit(CommitRequest{Group: "g", MemberID: id, Generation: gen,
		Offsets: map[TopicPartition]Offset{{Topic: "t", Partition: 0}: {Offset: 1}}})
}

// classicPair forms a classic group of two consumers at a generation:
// a owns t/0 and t/1, b owns t/2 and t/3.
func classicPair(h *harness) (a, b string, gen int32) {
	h.t.Helper()
	first := got(h.t, h.classicJoin("", nil))
	wantErr(h.t, "first join", first.Err, nil)
	second := h.classicJoin("", nil)
	again := got(h.t, h.classicJoin(first.MemberID, nil))
	r2 := got(h.t, second)
	wantErr(h.t, "second join", r2.Err, nil)
	a, b, gen = again.MemberID, r2.MemberID, again.Generation
	wait := h.sync(b, gen, nil)
	lead := got(h.t, h.sync(a, gen, map[string][]byte{
		a: encodeAssignment(tpSetOf(tps("t", 0, 1)), 1), b: encodeAssignment(tpSetOf(tps("t", 2, 3)), 1)}))
	wantErr(h.t, "leader sync", lead.Err, nil)
	wantErr(h.t, "follower sync", got(h.t, wait).Err, nil)
	return a, b, gen
}

func tpSetOf(list []TopicPartition) tpSet {
	s := tpSet{}
	for _, tp := range list {
		s[tp] = true
	}
	return s
}

// checkClassicExclusive is checkExclusive for a group holding classic
// members too.
func (h *harness) held() map[string][]TopicPartition {
	h.t.Helper()
	h.checkExclusive()
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	out := map[string][]TopicPartition{}
	for id, m := range h.c.consumers["g"].members {
		out[id] = m.assigned.sorted()
	}
	return out
}

// A live classic group is converted when a consumer-protocol member joins:
// the classic members keep what they own until they rejoin (an eager one
// gives everything up, a cooperative one revokes first), no partition is
// ever held twice, and each ends with its share. When the last
// consumer-protocol member leaves, the group is classic again and
// rebalances; meanwhile the members' commits at the epoch they had are
// taken, so that they give their partitions up committed.
func TestOnlineUpgradeAndDowngrade(t *testing.T) {
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 4})
	h.c.cfg.ConsumerMaxSize = 10
	a, b, gen := classicPair(h)

	n := h.hb("n", 0, []TopicPartition{})
	if n.Err != nil || len(n.Assignment) != 0 {
		t.Fatalf("consumer-protocol member joining the classic group: %+v; want in, with nothing yet (all is owned)", n)
	}
	o := h.hb("o", 0, []TopicPartition{})
	d, err, _ := h.c.DescribeConsumer("g")
	if err != nil || len(d.Members) != 4 {
		t.Fatalf("after the upgrade: %+v %v; want a consumer group of 4 members", d, err)
	}
	for _, m := range d.Members {
		if m.Classic != (m.ID == a || m.ID == b) {
			t.Errorf("member %s described as classic=%v", m.ID, m.Classic)
		}
	}
	if held := h.held(); len(held[a]) != 2 || len(held[b]) != 2 || len(o.Assignment) != 0 {
		t.Fatalf("classic members after the upgrade: %v; want each to keep its 2 partitions", held)
	}
	// Both classic members commit at their generation, and learn by
	// heartbeat that they must join again.
	wantErr(t, "commit at the classic generation", h.commitAt(a, gen), nil)
	wantErr(t, "commit at an older generation", h.commitAt(a, gen-1), kerr.IllegalGeneration)
	wantErr(t, "heartbeat of a", h.c.Heartbeat("g", a, nil, gen), kerr.RebalanceInProgress)

	// a is eager: it gave everything up and joins owning nothing.
	ja := got(t, h.classicJoin(a, nil))
	if ja.Err != nil || ja.Generation <= gen || ja.Leader != "" || ja.Protocol != "range" {
		t.Fatalf("eager rejoin: %+v; want a later generation, no leader, protocol range", ja)
	}
	gotA, err := h.classicSync(a, ja.Generation)
	wantErr(t, "sync of a", err, nil)
	if len(gotA) != 1 {
		t.Fatalf("eager member after rejoining: %v; want its one partition of four members", gotA)
	}
	h.held()

	// b is cooperative: it keeps t/2 and t/3 while it rejoins and is told
	// first what to give up.
	wantErr(t, "heartbeat of b", h.c.Heartbeat("g", b, nil, gen), kerr.RebalanceInProgress)
	jb := got(t, h.classicJoin(b, tps("t", 2, 3)))
	wantErr(t, "cooperative rejoin", jb.Err, nil)
	gotB, err := h.classicSync(b, jb.Generation)
	wantErr(t, "sync of b", err, nil)
	h.held()
	if len(gotB) != 1 || jb.Generation != gen {
		t.Fatalf("cooperative member told to revoke: %v at %d; want one of its two partitions kept, at generation %d", gotB, jb.Generation, gen)
	}
	wantErr(t, "commit while revoking", h.commitAt(b, jb.Generation), nil)
	wantErr(t, "heartbeat while revoking", h.c.Heartbeat("g", b, nil, jb.Generation), kerr.RebalanceInProgress)
	jb2 := got(t, h.classicJoin(b, gotB))
	if jb2.Err != nil || jb2.Generation <= jb.Generation {
		t.Fatalf("rejoin after revoking: %+v; want the new generation", jb2)
	}
	if gotB, err = h.classicSync(b, jb2.Generation); err != nil || len(gotB) != 1 {
		t.Fatalf("sync after revoking: %v %v", gotB, err)
	}
	wantErr(t, "heartbeat of a reconciled member", h.c.Heartbeat("g", b, nil, jb2.Generation), nil)
	n = h.hb("n", n.MemberEpoch, []TopicPartition{})
	o = h.hb("o", o.MemberEpoch, []TopicPartition{})
	held := h.held()
	for _, id := range []string{a, b, "n", "o"} {
		if len(held[id]) != 1 {
			t.Fatalf("after reconciling: %v; want one partition each", held)
		}
	}
	wantErr(t, "commit at the member's epoch", h.commitAt(b, jb2.Generation), nil)

	// n leaves: o still speaks the consumer protocol, nothing changes. o
	// leaves: the group is classic again and rebalances. The members'
	// requests at their epochs pass until it has.
	h.hb("n", -1, nil)
	if _, err, _ := h.c.DescribeConsumer("g"); err != nil {
		t.Fatalf("with a consumer-protocol member left: %v", err)
	}
	h.hb("o", -1, nil)
	h.c.mu.Lock()
	g := h.c.groups["g"]
	h.c.mu.Unlock()
	if g == nil || g.state != PreparingRebalance || len(g.members) != 2 {
		t.Fatalf("after the last consumer-protocol member left: %+v; want a classic group rebalancing with a and b", g)
	}
	wantErr(t, "heartbeat at the consumer epoch", h.c.Heartbeat("g", a, nil, ja.Generation), kerr.RebalanceInProgress)
	wantErr(t, "commit at the consumer epoch", h.commitAt(b, jb2.Generation), nil)
	ra := h.classicJoin(a, nil)
	waiting(t, ra)
	gb := got(t, h.classicJoin(b, nil))
	ga := got(t, ra)
	if ga.Err != nil || gb.Err != nil || ga.Generation != gb.Generation || ga.Protocol != "range" {
		t.Fatalf("classic rebalance after the downgrade: %+v %+v", ga, gb)
	}
	if ga.Leader != a && ga.Leader != b || len(ga.Members)+len(gb.Members) != 2 {
		t.Fatalf("the leader gets both members: %+v %+v", ga, gb)
	}
	wantErr(t, "commit at the old consumer epoch after the rebalance", h.commitAt(b, jb2.Generation), kerr.IllegalGeneration)
}

// The policy decides which way a live group may go; a refusal says why.
func TestMigrationPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy             string
		upgrade, downgrade bool
		classicJoinRefused bool
	}{
		{MigrationBidirectional, true, true, false},
		{MigrationUpgrade, true, false, false},
		{MigrationDowngrade, false, true, false},
		{MigrationDisabled, false, false, true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 4})
			h.c.cfg.MigrationPolicy = tc.policy
			classicPair(h)
			r := h.hb("n", 0, []TopicPartition{})
			if tc.upgrade != (r.Err == nil) {
				t.Fatalf("consumer member into a live classic group: %v %q", r.Err, r.Message)
			}
			if !tc.upgrade {
				if r.Err != kerr.GroupIDNotFound || !strings.Contains(r.Message, "migration-policy="+tc.policy) {
					t.Fatalf("refused upgrade: %v %q; want GROUP_ID_NOT_FOUND naming the policy", r.Err, r.Message)
				}
				return
			}
			// A new classic member may join the now consumer group unless
			// migration is disabled.
			if j := got(t, h.classicJoin("", nil)); (j.Err == kerr.InconsistentGroupProtocol) != tc.classicJoinRefused {
				t.Fatalf("new classic member into the consumer group: %v", j.Err)
			}
			h.hb("n", -1, nil)
			h.c.mu.Lock()
			_, classic := h.c.groups["g"]
			h.c.mu.Unlock()
			if classic != tc.downgrade {
				t.Fatalf("after the consumer member left: classic %v, want %v", classic, tc.downgrade)
			}
		})
	}
	// Without a policy the downgrade is disabled too: a consumer group
	// never takes a new classic member.
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 1})
	h.c.cfg.MigrationPolicy = MigrationDisabled
	h.hb("n", 0, []TopicPartition{})
	if j := got(t, h.classicJoin("", nil)); j.Err != kerr.InconsistentGroupProtocol {
		t.Fatalf("classic join into a consumer group with migration disabled: %v", j.Err)
	}
}

// What cannot be converted or admitted is refused with a reason, and the
// group keeps serving its members.
func TestMigrationRefusals(t *testing.T) {
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 2})
	// A classic group whose subscription is not a consumer's (as kgo's
	// tests join with "meta-range"): no upgrade.
	first := got(t, h.join("", protocols("range")...))
	wantErr(t, "join", first.Err, nil)
	r := h.hb("n", 0, []TopicPartition{})
	if r.Err != kerr.GroupIDNotFound || !strings.Contains(r.Message, "format") {
		t.Fatalf("upgrade of unreadable subscriptions: %v %q", r.Err, r.Message)
	}
	if r := h.hb("n", 5, []TopicPartition{}); r.Err != kerr.UnknownMemberID {
		t.Fatalf("a consumer heartbeat at an epoch into a classic group: %v", r.Err)
	}
	h.c.Leave("g", []LeaveMember{{MemberID: first.MemberID}})
	h.advance(time.Second)

	// A consumer group refuses classic members it could never hand back.
	n := h.hb("n", 0, []TopicPartition{})
	for _, tc := range []struct {
		name string
		edit func(*JoinRequest)
	}{
		{"another protocol type", func(r *JoinRequest) { r.ProtocolType = "connect" }},
		{"unreadable subscription", func(r *JoinRequest) { r.Protocols = protocols("range") }},
		{"truncated subscription", func(r *JoinRequest) { r.Protocols[0].Metadata = r.Protocols[0].Metadata[:5] }},
		{"huge subscription", func(r *JoinRequest) {
			meta := kmsg.ConsumerMemberMetadata{Version: 1}
			for i := 0; i <= maxSubscribedTopics; i++ {
				meta.Topics = append(meta.Topics, fmt.Sprint("t", i))
			}
			r.Protocols = []Protocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
		}},
	} {
		req := JoinRequest{Group: "g", ClientID: "classic", SessionTimeout: session, RebalanceTimeout: 30 * time.Second,
			ProtocolType: "consumer", Protocols: subscription(nil, "range")}
		tc.edit(&req)
		if j := got(t, h.c.Join(req)); j.Err != kerr.InconsistentGroupProtocol {
			t.Errorf("%s: %v, want INCONSISTENT_GROUP_PROTOCOL", tc.name, j.Err)
		}
	}
	// A consumer-protocol member cannot speak for itself in classic
	// requests, nor a classic member in consumer heartbeats.
	wantErr(t, "classic heartbeat of a consumer member", h.c.Heartbeat("g", "n", nil, n.MemberEpoch), kerr.UnknownMemberID)
	c := got(t, h.classicJoin("c", nil))
	wantErr(t, "classic join", c.Err, nil)
	if r := h.hb("c", c.Generation, []TopicPartition{}); r.Err != kerr.UnknownMemberID {
		t.Fatalf("consumer heartbeat of a classic member: %v", r.Err)
	}
	if r := h.hb("n", n.MemberEpoch, []TopicPartition{}); r.Err != nil {
		t.Fatalf("the consumer member after the refusals: %v", r.Err)
	}
}

// A classic member of a consumer group that does not rejoin when told, or
// does not sync after its join, is removed at its rebalance timeout, and
// its partitions go to the others.
func TestClassicMemberTimeouts(t *testing.T) {
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 2})
	a, b, gen := classicPair(h)
	n := h.hb("n", 0, []TopicPartition{})
	wantErr(t, "heartbeat", h.c.Heartbeat("g", a, nil, gen), kerr.RebalanceInProgress)
	// a heartbeats but never rejoins; b and n do what they are told.
	bGen := gen
	lingering := map[string]int32{a: gen}
	step := func() {
		h.advance(2 * time.Second)
		for id, gen := range lingering {
			h.c.Heartbeat("g", id, nil, gen) // keeps its session, nothing more
		}
		if err := h.c.Heartbeat("g", b, nil, bGen); err == kerr.RebalanceInProgress {
			j := got(t, h.classicJoin(b, h.held()[b]))
			wantErr(t, "rejoin of b", j.Err, nil)
			bGen = j.Generation
			_, err := h.classicSync(b, bGen)
			if err != nil && err != kerr.RebalanceInProgress {
				t.Fatal(err)
			}
		} else {
			wantErr(t, "heartbeat of b", err, nil)
		}
		n = h.hb("n", n.MemberEpoch, h.held()["n"])
		wantErr(t, "heartbeat of n", n.Err, nil)
	}
	for range 20 {
		step()
	}
	held := h.held()
	if _, ok := held[a]; ok || len(held[b])+len(held["n"]) != 2 {
		t.Fatalf("a classic member that never rejoined: %v; want it gone, its partitions with b and n", held)
	}
	// A member that joins but never syncs goes the same way.
	late := got(t, h.classicJoin("late", nil))
	wantErr(t, "join", late.Err, nil)
	lingering["late"] = late.Generation
	for range 20 {
		step()
	}
	if _, ok := h.held()["late"]; ok {
		t.Fatalf("a classic member that never synced is still in the group")
	}
}

// A classic group converted half way through a rebalance hands nothing out
// twice: a member that has not rejoined keeps its last assignment, one that
// rejoined keeps what its subscription says it still owns, and waiting
// JoinGroups and SyncGroups are told to join again (into the consumer
// group).
func TestUpgradeDuringRebalance(t *testing.T) {
	for _, phase := range []string{"preparing", "completing"} {
		t.Run(phase, func(t *testing.T) {
			h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 4})
			h.c.cfg.ConsumerMaxSize = 10
			a, b, gen := classicPair(h)
			var waits []<-chan JoinResult
			var syncWait <-chan SyncResult
			newcomer := h.classicJoin("", nil) // PreparingRebalance: a and b must rejoin
			waits = append(waits, newcomer)
			if phase == "completing" {
				// a rejoins as a cooperative member still owning t/0 and t/1,
				// b likewise: the generation completes, nobody has synced.
				ja := h.classicJoin(a, tps("t", 0, 1))
				jb := got(t, h.classicJoin(b, tps("t", 2, 3)))
				got(t, ja)
				got(t, newcomer)
				syncWait = h.sync(b, jb.Generation, nil)
				waits = nil
			}
			n := h.hb("n", 0, []TopicPartition{})
			if n.Err != nil || len(n.Assignment) != 0 {
				t.Fatalf("consumer member during the %s rebalance: %+v; want in, with nothing (all is owned)", phase, n)
			}
			for _, w := range waits {
				if r := got(t, w); r.Err != kerr.RebalanceInProgress {
					t.Fatalf("waiting JoinGroup: %v, want REBALANCE_IN_PROGRESS", r.Err)
				}
			}
			if syncWait != nil {
				if r := got(t, syncWait); r.Err != kerr.RebalanceInProgress {
					t.Fatalf("waiting SyncGroup: %v, want REBALANCE_IN_PROGRESS", r.Err)
				}
			}
			held := h.held()
			if len(held[a]) != 2 || len(held[b]) != 2 {
				t.Fatalf("after converting a %s rebalance: %v; want a and b to keep their partitions", phase, held)
			}
			// n is given partitions only once their owners let them go.
			gens := map[string]int32{a: gen, b: gen}
			if phase == "completing" {
				gens[a], gens[b] = gen+1, gen+1
			}
			for range 3 {
				for _, id := range []string{a, b} {
					if err := h.c.Heartbeat("g", id, nil, gens[id]); err == kerr.RebalanceInProgress {
						j := got(t, h.classicJoin(id, nil))
						wantErr(t, "rejoin", j.Err, nil)
						gens[id] = j.Generation
						h.classicSync(id, j.Generation)
					} else {
						wantErr(t, "heartbeat", err, nil)
					}
				}
				n = h.hb("n", n.MemberEpoch, h.held()["n"])
				h.held()
			}
			if len(h.held()["n"]) == 0 {
				t.Fatalf("the consumer member never got partitions: %v", h.held())
			}
		})
	}
}

// What a classic leader assigned is kept on upgrade only where it names a
// partition that exists: a hostile or confused leader cannot make the
// coordinator hold partitions beyond the cluster's.
func TestUpgradeKeepsOnlyExistingPartitions(t *testing.T) {
	h := consumerHarness(t, TopicInfo{Name: "t", Partitions: 2})
	first := got(t, h.classicJoin("", nil))
	bogus := tpSetOf(append(tps("t", 0, 99, -1), tps("ghost", 0, 1)...))
	wantErr(t, "leader sync", got(t, h.sync(first.MemberID, first.Generation, map[string][]byte{first.MemberID: encodeAssignment(bogus, 1)})).Err, nil)
	if n := h.hb("n", 0, []TopicPartition{}); n.Err != nil {
		t.Fatal(n.Err)
	}
	if held := h.held()[first.MemberID]; fmt.Sprint(held) != fmt.Sprint(tps("t", 0)) {
		t.Fatalf("classic member after the upgrade holds %v; want only t/0, the one that exists", held)
	}
}
