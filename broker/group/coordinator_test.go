package group

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// harness drives a coordinator with a clock of its own: time moves only when
// a test says so, and deadlines are checked only when it calls tick.
type harness struct {
	t   *testing.T
	c   *Coordinator
	now time.Time
}

const session = 10 * time.Second

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	if cfg.MinSessionTimeout == 0 {
		cfg.MinSessionTimeout = time.Second
	}
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = -1
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := OpenDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, now: time.Unix(1_000_000, 0)}
	h.c = newCoordinator(cfg, store)
	h.c.now = func() time.Time { return h.now }
	t.Cleanup(h.c.Close)
	return h
}

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.c.tick(h.now)
}

func protocols(names ...string) []Protocol {
	var ps []Protocol
	for _, n := range names {
		ps = append(ps, Protocol{Name: n, Metadata: []byte("meta-" + n)})
	}
	return ps
}

func (h *harness) join(member string, ps ...Protocol) <-chan JoinResult {
	return h.c.Join(JoinRequest{
		Group: "g", MemberID: member, ClientID: "client", SessionTimeout: session,
		RebalanceTimeout: 30 * time.Second, ProtocolType: "consumer", Protocols: ps,
	})
}

func (h *harness) sync(member string, gen int32, assignments map[string][]byte) <-chan SyncResult {
	return h.c.Sync(SyncRequest{Group: "g", MemberID: member, Generation: gen, Assignments: assignments})
}

// got returns the result that must be there already.
func got[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case r := <-ch:
		return r
	default:
		t.Fatalf("no answer yet; want one")
	}
	panic("unreachable")
}

// waiting checks that no result is there yet.
func waiting[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("answered %+v; want it to wait", r)
	default:
	}
}

func wantErr(t *testing.T, what string, got, want *kerr.Error) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

// stableGroup forms a group of the given members (the first leads) at
// generation gen, every member assigned its own name.
func (h *harness) stableGroup(ids ...string) (members []string, gen int32) {
	h.t.Helper()
	var chans []<-chan JoinResult
	first := got(h.t, h.join("", protocols("range")...))
	wantErr(h.t, "first join", first.Err, nil)
	members = append(members, first.MemberID)
	gen = first.Generation
	for range ids[1:] {
		chans = append(chans, h.join("", protocols("range")...))
	}
	if len(chans) > 0 {
		rejoin := h.join(first.MemberID, protocols("range")...)
		chans = append([]<-chan JoinResult{rejoin}, chans...)
		members = members[:0]
		for _, ch := range chans {
			r := got(h.t, ch)
			wantErr(h.t, "join", r.Err, nil)
			members = append(members, r.MemberID)
			gen = r.Generation
		}
	}
	assign := map[string][]byte{}
	for i, m := range members {
		assign[m] = []byte(ids[i])
	}
	var syncs []<-chan SyncResult
	for _, m := range members[1:] {
		syncs = append(syncs, h.sync(m, gen, nil))
	}
	leader := got(h.t, h.sync(members[0], gen, assign))
	wantErr(h.t, "leader sync", leader.Err, nil)
	for _, ch := range syncs {
		wantErr(h.t, "follower sync", got(h.t, ch).Err, nil)
	}
	return members, gen
}

// TestJoinSyncRebalance walks the classic protocol: a first member forms
// generation 1 and leads; a second one triggers a rebalance that the first
// learns of by heartbeat; both form generation 2, the leader assigns, the
// followers wait for it; the old generation is refused.
func TestJoinSyncRebalance(t *testing.T) {
	h := newHarness(t, Config{})
	a := got(t, h.join("", protocols("range")...))
	if a.Err != nil || a.Generation != 1 || a.Leader != a.MemberID || len(a.Members) != 1 || a.Protocol != "range" {
		t.Fatalf("first join: %+v", a)
	}
	s := got(t, h.sync(a.MemberID, 1, map[string][]byte{a.MemberID: []byte("all")}))
	if s.Err != nil || string(s.Assignment) != "all" {
		t.Fatalf("leader sync: %+v", s)
	}
	wantErr(t, "heartbeat when stable", h.c.Heartbeat("g", a.MemberID, nil, 1), nil)

	bJoin := h.join("", protocols("range")...)
	waiting(t, bJoin)
	wantErr(t, "heartbeat during rebalance", h.c.Heartbeat("g", a.MemberID, nil, 1), kerr.RebalanceInProgress)
	wantErr(t, "sync during rebalance", got(t, h.sync(a.MemberID, 1, nil)).Err, kerr.RebalanceInProgress)

	a2 := got(t, h.join(a.MemberID, protocols("range")...))
	b := got(t, bJoin)
	if a2.Generation != 2 || b.Generation != 2 || a2.Leader != a.MemberID || b.Leader != a.MemberID {
		t.Fatalf("generation 2: leader's %+v, follower's %+v", a2, b)
	}
	if len(a2.Members) != 2 || len(b.Members) != 0 {
		t.Fatalf("only the leader gets the members: leader %d, follower %d", len(a2.Members), len(b.Members))
	}

	bSync := h.sync(b.MemberID, 2, nil)
	waiting(t, bSync)
	wantErr(t, "stale generation", h.c.Heartbeat("g", a.MemberID, nil, 1), kerr.IllegalGeneration)
	got(t, h.sync(a.MemberID, 2, map[string][]byte{a.MemberID: []byte("p0"), b.MemberID: []byte("p1")}))
	if r := got(t, bSync); r.Err != nil || string(r.Assignment) != "p1" {
		t.Fatalf("follower sync: %+v", r)
	}
	d, err := h.c.Describe("g")
	if err != nil || d.State != Stable || len(d.Members) != 2 || string(d.Members[1].Assignment) != "p1" {
		t.Fatalf("describe: %+v %v", d, err)
	}
}

// TestSessionExpiry removes a member that stops heartbeating; the others
// rejoin into the next generation without it.
func TestSessionExpiry(t *testing.T) {
	h := newHarness(t, Config{})
	m, gen := h.stableGroup("a", "b")
	h.advance(session / 2)
	wantErr(t, "a's heartbeat", h.c.Heartbeat("g", m[0], nil, gen), nil)
	h.advance(session/2 + time.Second) // b is silent for longer than its session
	wantErr(t, "b after expiry", h.c.Heartbeat("g", m[1], nil, gen), kerr.UnknownMemberID)
	wantErr(t, "a told to rejoin", h.c.Heartbeat("g", m[0], nil, gen), kerr.RebalanceInProgress)
	r := got(t, h.join(m[0], protocols("range")...))
	if r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("next generation: %+v", r)
	}
}

// TestRebalanceTimeout ends a rebalance at the rebalance timeout with the
// members that rejoined; a member that kept heartbeating but never rejoined
// is out.
func TestRebalanceTimeout(t *testing.T) {
	h := newHarness(t, Config{})
	m, gen := h.stableGroup("a", "b")
	c := h.join("", protocols("range")...)
	a := h.join(m[0], protocols("range")...)
	for i := 0; i < 4; i++ {
		h.advance(8 * time.Second) // b heartbeats but does not rejoin
		if i < 3 {
			wantErr(t, "b's heartbeat", h.c.Heartbeat("g", m[1], nil, gen), kerr.RebalanceInProgress)
		}
	}
	ra, rc := got(t, a), got(t, c)
	if ra.Generation != gen+1 || len(ra.Members) != 2 || rc.Err != nil {
		t.Fatalf("after the rebalance timeout: leader %+v, new member %+v", ra, rc)
	}
	wantErr(t, "b", h.c.Heartbeat("g", m[1], nil, gen), kerr.UnknownMemberID)
}

// TestLeaderLeaves: the next generation gets a new leader at once.
func TestLeaderLeaves(t *testing.T) {
	h := newHarness(t, Config{})
	m, gen := h.stableGroup("a", "b")
	groupErr, errs := h.c.Leave("g", []LeaveMember{{MemberID: m[0]}, {MemberID: "nobody"}})
	if groupErr != nil || errs[0] != nil || errs[1] != kerr.UnknownMemberID {
		t.Fatalf("leave: %v %v", groupErr, errs)
	}
	r := got(t, h.join(m[1], protocols("range")...))
	if r.Generation != gen+1 || r.Leader != m[1] {
		t.Fatalf("after the leader left: %+v", r)
	}
	h.c.Leave("g", []LeaveMember{{MemberID: m[1]}})
	if d, _ := h.c.Describe("g"); d.State != Dead {
		t.Fatalf("group without members or offsets is %v, want Dead", d.State)
	}
}

// TestProtocolChoice: the protocol every member supports that most members
// prefer; members that share none are refused.
func TestProtocolChoice(t *testing.T) {
	cases := []struct {
		name    string
		members [][]string
		want    string
		refused int // index of a member refused, or -1
	}{
		{"one member, first preference", [][]string{{"cooperative-sticky", "range"}}, "cooperative-sticky", -1},
		{"majority preference", [][]string{{"range", "roundrobin"}, {"roundrobin", "range"}, {"roundrobin"}}, "roundrobin", -1},
		{"only common protocol", [][]string{{"sticky", "range"}, {"range"}}, "range", -1},
		{"tie goes to the earliest member", [][]string{{"range", "roundrobin"}, {"roundrobin", "range"}}, "range", -1},
		{"nothing in common: the second is refused", [][]string{{"range"}, {"roundrobin"}}, "range", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{InitialRebalanceDelay: time.Second})
			var chans []<-chan JoinResult
			for i, names := range tc.members {
				ch := h.join("", protocols(names...)...)
				if i == tc.refused {
					wantErr(t, "joining without a common protocol", got(t, ch).Err, kerr.InconsistentGroupProtocol)
					continue
				}
				chans = append(chans, ch)
			}
			h.advance(2 * time.Second)
			for _, ch := range chans {
				if r := got(t, ch); r.Protocol != tc.want {
					t.Fatalf("protocol %q, want %q", r.Protocol, tc.want)
				}
			}
		})
	}
}

// TestJoinRefusals are the JoinGroup errors a client can cause.
func TestJoinRefusals(t *testing.T) {
	h := newHarness(t, Config{MaxSessionTimeout: time.Minute})
	base := JoinRequest{Group: "g", SessionTimeout: session, ProtocolType: "consumer", Protocols: protocols("range")}
	cases := []struct {
		name string
		edit func(*JoinRequest)
		want *kerr.Error
	}{
		{"no protocols", func(r *JoinRequest) { r.Protocols = nil }, kerr.InconsistentGroupProtocol},
		{"no protocol type", func(r *JoinRequest) { r.ProtocolType = "" }, kerr.InconsistentGroupProtocol},
		{"session below the minimum", func(r *JoinRequest) { r.SessionTimeout = time.Millisecond }, kerr.InvalidSessionTimeout},
		{"session above the maximum", func(r *JoinRequest) { r.SessionTimeout = time.Hour }, kerr.InvalidSessionTimeout},
		{"empty group id", func(r *JoinRequest) { r.Group = "" }, kerr.InvalidGroupID},
		{"unknown member id", func(r *JoinRequest) { r.MemberID = "made-up" }, kerr.UnknownMemberID},
	}
	for _, tc := range cases {
		r := base
		tc.edit(&r)
		wantErr(t, tc.name, got(t, h.c.Join(r)).Err, tc.want)
	}
	first := got(t, h.c.Join(base))
	other := base
	other.ProtocolType = "connect"
	wantErr(t, "another protocol type", got(t, h.c.Join(other)).Err, kerr.InconsistentGroupProtocol)
	wantErr(t, "sync from a non-member", got(t, h.sync("stranger", first.Generation, nil)).Err, kerr.UnknownMemberID)
}

// TestMemberIDRequired: from JoinGroup v4 a new member first receives its
// id, and only its second join makes it a member.
func TestMemberIDRequired(t *testing.T) {
	h := newHarness(t, Config{})
	r := JoinRequest{Group: "g", ClientID: "app", SessionTimeout: session, ProtocolType: "consumer", Protocols: protocols("range"), RequireKnownMember: true}
	first := got(t, h.c.Join(r))
	if first.Err != kerr.MemberIDRequired || first.MemberID == "" {
		t.Fatalf("first join: %+v", first)
	}
	r.MemberID = first.MemberID
	if second := got(t, h.c.Join(r)); second.Err != nil || second.MemberID != first.MemberID || second.Generation != 1 {
		t.Fatalf("second join: %+v", second)
	}
	// An id handed out but never used expires with the session timeout.
	r.MemberID = ""
	third := got(t, h.c.Join(r))
	h.advance(session + time.Second)
	r.MemberID = third.MemberID
	wantErr(t, "expired pending id", got(t, h.c.Join(r)).Err, kerr.UnknownMemberID)
}

// TestStaticMember: a restarted instance takes its place back and fences the
// member id it had before.
func TestStaticMember(t *testing.T) {
	h := newHarness(t, Config{})
	inst := "host-1"
	r := JoinRequest{Group: "g", InstanceID: &inst, SessionTimeout: session, ProtocolType: "consumer", Protocols: protocols("range"), RequireKnownMember: true}
	old := got(t, h.c.Join(r))
	if old.Err != nil {
		t.Fatalf("static members need no MEMBER_ID_REQUIRED round: %v", old.Err)
	}
	again := got(t, h.c.Join(r))
	if again.Err != nil || again.MemberID == old.MemberID {
		t.Fatalf("rejoin of the instance: %+v", again)
	}
	wantErr(t, "old member id", h.c.Heartbeat("g", old.MemberID, &inst, again.Generation), kerr.FencedInstanceID)
	groupErr, errs := h.c.Leave("g", []LeaveMember{{InstanceID: &inst}})
	if groupErr != nil || errs[0] != nil {
		t.Fatalf("leave by instance id: %v %v", groupErr, errs)
	}
}

// TestCommitRules: who may commit, and when.
func TestCommitRules(t *testing.T) {
	h := newHarness(t, Config{})
	offsets := map[TopicPartition]Offset{{"t", 0}: {Offset: 5}}
	commit := func(member string, gen int32) *kerr.Error {
		return h.c.Commit(CommitRequest{Group: "g", MemberID: member, Generation: gen, Offsets: offsets})
	}
	wantErr(t, "generation from a coordinator that forgot it", commit("m", 3), kerr.IllegalGeneration)
	wantErr(t, "outside group management, no members", commit("", -1), nil)

	m, gen := h.stableGroup("a", "b")
	wantErr(t, "outside group management, live group", commit("", -1), kerr.UnknownMemberID)
	wantErr(t, "member of the generation", commit(m[1], gen), nil)
	wantErr(t, "stale generation", commit(m[1], gen-1), kerr.IllegalGeneration)
	wantErr(t, "unknown member", commit("stranger", gen), kerr.UnknownMemberID)

	h.join("", protocols("range")...) // a rebalance starts
	wantErr(t, "while preparing a rebalance", commit(m[1], gen), nil)
	h.join(m[0], protocols("range")...)
	h.join(m[1], protocols("range")...)
	wantErr(t, "before the new assignment", commit(m[1], gen+1), kerr.RebalanceInProgress)

	got, err := h.c.Fetch("g")
	if err != nil || got[TopicPartition{"t", 0}].Offset != 5 {
		t.Fatalf("fetch: %v %v", got, err)
	}
}

// TestInitialDelay: a new group waits for the members that start with it,
// each new one restarting the wait, rather than rebalancing per member.
func TestInitialDelay(t *testing.T) {
	h := newHarness(t, Config{InitialRebalanceDelay: 3 * time.Second})
	a := h.join("", protocols("range")...)
	h.advance(2 * time.Second)
	b := h.join("", protocols("range")...)
	h.advance(2 * time.Second)
	waiting(t, a)
	h.advance(2 * time.Second)
	if ra, rb := got(t, a), got(t, b); ra.Generation != 1 || rb.Generation != 1 || len(ra.Members)+len(rb.Members) != 2 {
		t.Fatalf("one generation with both: %+v %+v", ra, rb)
	}
}

// TestCoordinatorMoves: a group this broker stops coordinating is dropped,
// and its waiting members are sent to look for the new coordinator.
func TestCoordinatorMoves(t *testing.T) {
	owns := true
	h := newHarness(t, Config{Owns: func(string) bool { return owns }})
	m, gen := h.stableGroup("a", "b")
	joining := h.join(m[0], protocols("range")...)
	owns = false
	h.advance(time.Millisecond)
	wantErr(t, "waiting join", got(t, joining).Err, kerr.NotCoordinator)
	wantErr(t, "heartbeat", h.c.Heartbeat("g", m[1], nil, gen), kerr.NotCoordinator)
	owns = true
	wantErr(t, "heartbeat after moving back", h.c.Heartbeat("g", m[1], nil, gen), kerr.UnknownMemberID)
}

// TestCloseAnswersWaiters: shutdown does not leave JoinGroups hanging.
func TestCloseAnswersWaiters(t *testing.T) {
	h := newHarness(t, Config{InitialRebalanceDelay: time.Minute})
	ch := h.join("", protocols("range")...)
	h.c.Close()
	wantErr(t, "waiting join", got(t, ch).Err, kerr.CoordinatorNotAvailable)
	wantErr(t, "join after close", got(t, h.join("", protocols("range")...)).Err, kerr.CoordinatorNotAvailable)
}

// TestDeleteAndList: groups with members cannot be deleted; groups with only
// offsets are listed as Empty and can.
func TestDeleteAndList(t *testing.T) {
	h := newHarness(t, Config{})
	h.stableGroup("a")
	if err := h.c.Commit(CommitRequest{Group: "offsets-only", Generation: -1, Offsets: map[TopicPartition]Offset{{"t", 1}: {Offset: 9}}}); err != nil {
		t.Fatal(err)
	}
	list, err := h.c.List()
	if err != nil || len(list) != 2 || list[0].Name != "g" || list[0].State != Stable || list[1].Name != "offsets-only" || list[1].State != Empty {
		t.Fatalf("list: %+v %v", list, err)
	}
	wantErr(t, "delete with members", h.c.Delete("g"), kerr.NonEmptyGroup)
	wantErr(t, "delete offsets-only", h.c.Delete("offsets-only"), nil)
	wantErr(t, "delete again", h.c.Delete("offsets-only"), kerr.GroupIDNotFound)
}
