package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The group state machine as a table: from each state, each request or
// passage of time, the answer the request gets and the state, generation
// and membership the group is left in. Time is the harness's clock; nothing
// sleeps.

// world is a group built by a fixture: its members (a leads; b follows, ""
// where the fixture has none) and its generation.
type world struct {
	a, b string
	gen  int32
}

// fixtures build group "g" in each state.
var fixtures = map[State]func(h *harness) world{
	Dead: func(*harness) world { return world{} },
	// The last member left: the rebalance ends at once with nobody, and the
	// group stays Empty until the next tick drops it.
	Empty: func(h *harness) world {
		m, _ := h.stableGroup("a")
		h.c.Leave("g", []LeaveMember{{MemberID: m[0]}})
		_, gen, _ := h.state()
		return world{a: m[0], gen: gen}
	},
	// The leader rejoined and waits for b.
	PreparingRebalance: func(h *harness) world {
		m, gen := h.stableGroup("a", "b")
		h.join(m[0], protocols("range")...)
		return world{a: m[0], b: m[1], gen: gen}
	},
	// Both rejoined; no one has synced the new generation yet.
	CompletingRebalance: func(h *harness) world {
		m, gen := h.stableGroup("a", "b")
		h.join(m[0], protocols("range")...)
		got(h.t, h.join(m[1], protocols("range")...))
		return world{a: m[0], b: m[1], gen: gen + 1}
	},
	Stable: func(h *harness) world {
		m, gen := h.stableGroup("a", "b")
		return world{a: m[0], b: m[1], gen: gen}
	},
}

// state reads the group's state, generation and member count; a group the
// coordinator does not hold is Dead.
func (h *harness) state() (State, int32, int) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	g := h.c.groups["g"]
	if g == nil {
		return Dead, 0, 0
	}
	return g.state, g.generation, len(g.members)
}

// answer is what a request got: an error, or nothing yet (it waits for the
// rebalance or the leader).
type answer struct {
	err   *kerr.Error
	waits bool
}

func (a answer) String() string {
	if a.waits {
		return "waits"
	}
	if a.err == nil {
		return "ok"
	}
	return a.err.Message
}

func answerOf[T any](ch <-chan T, errOf func(T) *kerr.Error) answer {
	select {
	case r := <-ch:
		return answer{err: errOf(r)}
	default:
		return answer{waits: true}
	}
}

func joinErr(r JoinResult) *kerr.Error { return r.Err }
func syncErr(r SyncResult) *kerr.Error { return r.Err }

// Events, each a request or a passage of time.
func joinNew(h *harness, _ world) answer {
	return answerOf(h.join("", protocols("range")...), joinErr)
}

func rejoin(who func(world) string, ps ...Protocol) func(*harness, world) answer {
	return func(h *harness, w world) answer { return answerOf(h.join(who(w), ps...), joinErr) }
}

func syncAs(who func(world) string, genDelta int32) func(*harness, world) answer {
	return func(h *harness, w world) answer {
		assign := map[string][]byte{w.a: []byte("pa"), w.b: []byte("pb")}
		return answerOf(h.sync(who(w), w.gen+genDelta, assign), syncErr)
	}
}

func heartbeat(who func(world) string, genDelta int32) func(*harness, world) answer {
	return func(h *harness, w world) answer {
		return answer{err: h.c.Heartbeat("g", who(w), nil, w.gen+genDelta)}
	}
}

func leave(who ...func(world) string) func(*harness, world) answer {
	return func(h *harness, w world) answer {
		var ms []LeaveMember
		for _, f := range who {
			ms = append(ms, LeaveMember{MemberID: f(w)})
		}
		groupErr, errs := h.c.Leave("g", ms)
		if groupErr != nil {
			return answer{err: groupErr}
		}
		for _, err := range errs {
			if err != nil {
				return answer{err: err}
			}
		}
		return answer{}
	}
}

// bExpires: a heartbeats, b stays silent past its session timeout.
func bExpires(h *harness, w world) answer {
	h.advance(session / 2)
	h.c.Heartbeat("g", w.a, nil, w.gen)
	h.advance(session/2 + time.Second)
	return answer{}
}

// everyoneExpires: nobody heartbeats for longer than the session timeout.
func everyoneExpires(h *harness, _ world) answer {
	h.advance(session + time.Second)
	return answer{}
}

// rebalanceTimeout: b heartbeats (so its session lives) but never rejoins,
// until the rebalance timeout (30s) passes.
func rebalanceTimeout(h *harness, w world) answer {
	for range 4 {
		h.advance(8 * time.Second)
		h.c.Heartbeat("g", w.b, nil, w.gen)
	}
	return answer{}
}

func tick(h *harness, _ world) answer {
	h.advance(time.Millisecond)
	return answer{}
}

var (
	a        = func(w world) string { return w.a }
	b        = func(w world) string { return w.b }
	stranger = func(world) string { return "stranger" }
)

func TestGroupStates(t *testing.T) {
	ok, waits := answer{}, answer{waits: true}
	fails := func(err *kerr.Error) answer { return answer{err: err} }
	cases := []struct {
		from    State
		event   string
		do      func(*harness, world) answer
		want    answer
		to      State
		genBump int32 // generation after, relative to the fixture's (a Dead group has none)
		members int
	}{
		{Dead, "a member joins", joinNew, ok, CompletingRebalance, 1, 1},
		{Dead, "join with a made-up member id", rejoin(stranger, protocols("range")...), fails(kerr.UnknownMemberID), Dead, 0, 0},
		{Dead, "heartbeat", heartbeat(stranger, 0), fails(kerr.UnknownMemberID), Dead, 0, 0},
		{Dead, "sync", syncAs(stranger, 0), fails(kerr.UnknownMemberID), Dead, 0, 0},
		{Dead, "leave", leave(stranger), fails(kerr.UnknownMemberID), Dead, 0, 0},

		{Empty, "a member joins", joinNew, ok, CompletingRebalance, 1, 1},
		{Empty, "the member that left heartbeats", heartbeat(a, 0), fails(kerr.UnknownMemberID), Empty, 0, 0},
		{Empty, "the member that left rejoins", rejoin(a, protocols("range")...), fails(kerr.UnknownMemberID), Empty, 0, 0},
		{Empty, "the next tick drops it", tick, ok, Dead, 0, 0},

		{Stable, "heartbeat", heartbeat(b, 0), ok, Stable, 0, 2},
		{Stable, "heartbeat of the previous generation", heartbeat(b, -1), fails(kerr.IllegalGeneration), Stable, 0, 2},
		{Stable, "heartbeat of a stranger", heartbeat(stranger, 0), fails(kerr.UnknownMemberID), Stable, 0, 2},
		{Stable, "a follower syncs again", syncAs(b, 0), ok, Stable, 0, 2},
		{Stable, "sync of the previous generation", syncAs(b, -1), fails(kerr.IllegalGeneration), Stable, 0, 2},
		{Stable, "a follower rejoins unchanged", rejoin(b, protocols("range")...), ok, Stable, 0, 2},
		{Stable, "the leader rejoins", rejoin(a, protocols("range")...), waits, PreparingRebalance, 0, 2},
		{Stable, "a new member joins", joinNew, waits, PreparingRebalance, 0, 3},
		{Stable, "a follower leaves", leave(b), ok, PreparingRebalance, 0, 1},
		{Stable, "everyone leaves", leave(a, b), ok, Empty, 1, 0},
		{Stable, "a follower's session expires", bExpires, ok, PreparingRebalance, 0, 1},
		{Stable, "every session expires", everyoneExpires, ok, Dead, 0, 0},

		{PreparingRebalance, "heartbeat", heartbeat(b, 0), fails(kerr.RebalanceInProgress), PreparingRebalance, 0, 2},
		{PreparingRebalance, "heartbeat of the previous generation", heartbeat(b, -1), fails(kerr.IllegalGeneration), PreparingRebalance, 0, 2},
		{PreparingRebalance, "sync", syncAs(b, 0), fails(kerr.RebalanceInProgress), PreparingRebalance, 0, 2},
		{PreparingRebalance, "the last member rejoins", rejoin(b, protocols("range")...), ok, CompletingRebalance, 1, 2},
		{PreparingRebalance, "the member not yet rejoined leaves", leave(b), ok, CompletingRebalance, 1, 1},
		{PreparingRebalance, "a new member joins", joinNew, waits, PreparingRebalance, 0, 3},
		{PreparingRebalance, "the rebalance timeout passes", rebalanceTimeout, ok, CompletingRebalance, 1, 1},

		{CompletingRebalance, "a follower syncs", syncAs(b, 0), waits, CompletingRebalance, 0, 2},
		{CompletingRebalance, "the leader syncs", syncAs(a, 0), ok, Stable, 0, 2},
		{CompletingRebalance, "sync of the previous generation", syncAs(b, -1), fails(kerr.IllegalGeneration), CompletingRebalance, 0, 2},
		{CompletingRebalance, "sync of a stranger", syncAs(stranger, 0), fails(kerr.UnknownMemberID), CompletingRebalance, 0, 2},
		{CompletingRebalance, "heartbeat", heartbeat(b, 0), ok, CompletingRebalance, 0, 2},
		{CompletingRebalance, "a member rejoins unchanged", rejoin(b, protocols("range")...), ok, CompletingRebalance, 0, 2},
		{CompletingRebalance, "a member rejoins with new protocols", rejoin(b, protocols("roundrobin", "range")...), waits, PreparingRebalance, 0, 2},
		{CompletingRebalance, "a new member joins", joinNew, waits, PreparingRebalance, 0, 3},
		{CompletingRebalance, "a follower leaves", leave(b), ok, PreparingRebalance, 0, 1},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/%s", tc.from, tc.event), func(t *testing.T) {
			h := newHarness(t, Config{})
			w := fixtures[tc.from](h)
			if s, _, _ := h.state(); s != tc.from {
				t.Fatalf("fixture built %v, want %v", s, tc.from)
			}
			if got := tc.do(h, w); got != tc.want {
				t.Fatalf("answer %v, want %v", got, tc.want)
			}
			state, gen, members := h.state()
			wantGen := w.gen + tc.genBump
			if tc.to == Dead {
				wantGen = 0
			}
			if state != tc.to || gen != wantGen || members != tc.members {
				t.Fatalf("left %v at generation %d with %d members, want %v at %d with %d",
					state, gen, members, tc.to, wantGen, tc.members)
			}
		})
	}
}
