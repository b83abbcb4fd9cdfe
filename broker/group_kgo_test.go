package broker_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ledger is what a group of consumers saw, shared by its members.
type ledger struct {
	mu         sync.Mutex
	seen       map[string]int   // record value -> times consumed
	committed  map[int32]int64  // highest acknowledged commit per partition
	owner      map[int32]string // partition -> member consuming it
	violations []string
}

func newLedger() *ledger {
	return &ledger{seen: map[string]int{}, committed: map[int32]int64{}, owner: map[int32]string{}}
}

func (l *ledger) violate(format string, args ...any) {
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
}

func (l *ledger) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// kgoMember is one consumer of the group, polling in its own goroutine.
type kgoMember struct {
	name string
	cl   *kgo.Client
	ks   *killSwitch
	stop context.CancelFunc
	done chan struct{}
}

func (m *kgoMember) owned(l *ledger) []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ps []int32
	for p, o := range l.owner {
		if o == m.name {
			ps = append(ps, p)
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

func startKgoMember(t *testing.T, addr, groupName, topic, name string, l *ledger, opts ...kgo.Opt) *kgoMember {
	t.Helper()
	m := &kgoMember{name: name, ks: &killSwitch{}, done: make(chan struct{})}
	assigned := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, p := range ps[topic] {
			if o, ok := l.owner[p]; ok && o != name {
				l.violate("partition %d assigned to %s while %s still consumes it", p, name, o)
			}
			l.owner[p] = name
		}
	}
	released := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, p := range ps[topic] {
			if l.owner[p] == name {
				delete(l.owner, p)
			}
		}
	}
	commitDone := func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, rt := range resp.Topics {
			for j, rp := range rt.Partitions {
				if rp.ErrorCode == 0 {
					off := req.Topics[i].Partitions[j].Offset
					l.committed[rp.Partition] = max(l.committed[rp.Partition], off)
				}
			}
		}
	}
	// Our own revoke callback replaces kgo's default one, which commits
	// what was consumed before the partitions go: do the same.
	revoked := func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
		cl.CommitOffsetsSync(context.Background(), cl.UncommittedOffsets(), commitDone)
		released(ctx, cl, ps)
	}
	all := append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.Dialer(m.ks.dial),
		kgo.ClientID(name),
		kgo.ConsumerGroup(groupName),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(time.Second),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.AutoCommitInterval(200 * time.Millisecond),
		kgo.AutoCommitCallback(commitDone),
		kgo.OnPartitionsAssigned(assigned),
		kgo.OnPartitionsRevoked(revoked),
		kgo.OnPartitionsLost(released),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			// Commits acknowledged before this poll cover only records of
			// earlier polls, so no record of this poll may lie below them.
			l.mu.Lock()
			before := make(map[int32]int64, len(l.committed))
			for p, o := range l.committed {
				before[p] = o
			}
			l.mu.Unlock()
			fs := cl.PollFetches(ctx)
			l.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset < before[r.Partition] {
					l.violate("%s consumed partition %d offset %d below the committed offset %d", name, r.Partition, r.Offset, before[r.Partition])
				}
				l.seen[string(r.Value)]++
			})
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		m.stop()
		<-m.done
		cl.Close()
	})
	return m
}

// crash stops consuming and cuts the member's connections: no LeaveGroup,
// no final commit, as if its process died.
func (m *kgoMember) crash(l *ledger) {
	m.stop()
	<-m.done
	m.ks.kill()
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, o := range l.owner {
		if o == m.name {
			delete(l.owner, p)
		}
	}
}

// TestKgoGroupThreeMembers runs three kgo consumers (cooperative-sticky) over
// twelve partitions: every record is consumed, partitions are spread four
// each and never owned twice, a crashed member's partitions move to the
// others once its session times out, and nothing is consumed again below an
// acknowledged commit.
func TestKgoGroupThreeMembers(t *testing.T) {
	const partitions, half = 12, 6000
	const session = time.Second
	b := startGroupBroker(t)
	createTopic(t, b.Addr, "clicks", partitions, nil)
	produceValues(t, b.Addr, "clicks", 0, half)

	l := newLedger()
	balancer := kgo.Balancers(kgo.CooperativeStickyBalancer())
	members := []*kgoMember{
		startKgoMember(t, b.Addr, "spread", "clicks", "a", l, balancer),
		startKgoMember(t, b.Addr, "spread", "clicks", "b", l, balancer),
		startKgoMember(t, b.Addr, "spread", "clicks", "c", l, balancer),
	}
	testenv.Eventually(t, 30*time.Second, "three members owning four partitions each", func() bool {
		for _, m := range members {
			if len(m.owned(l)) != partitions/3 {
				return false
			}
		}
		return true
	})
	testenv.Eventually(t, 30*time.Second, "the first half consumed", func() bool { return l.distinct() == half })

	crashed := members[0]
	lost := crashed.owned(l)
	crashed.crash(l)
	start := time.Now()
	testenv.Eventually(t, 15*time.Second, "the survivors owning every partition", func() bool {
		return len(members[1].owned(l))+len(members[2].owned(l)) == partitions
	})
	moved := time.Since(start)
	t.Logf("partitions %v of the crashed member moved after %v (session timeout %v)", lost, moved, session)
	if moved > session+3*time.Second {
		t.Errorf("partitions moved after %v; want about the session timeout (%v)", moved, session)
	}

	produceValues(t, b.Addr, "clicks", half, 2*half)
	testenv.Eventually(t, 30*time.Second, "every record consumed", func() bool { return l.distinct() == 2*half })

	l.mu.Lock()
	dups := 0
	for _, n := range l.seen {
		dups += n - 1
	}
	violations := append([]string(nil), l.violations...)
	l.mu.Unlock()
	t.Logf("%d records consumed twice (uncommitted work of the crashed member)", dups)
	for _, v := range violations {
		t.Error(v)
	}

	// The survivors commit on leaving: every partition ends fully committed.
	members[1].stop()
	members[2].stop()
	<-members[1].done
	<-members[2].done
	members[1].cl.Close()
	members[2].cl.Close()
	offs := committed(t, b.Addr, "spread")
	for p := int32(0); p < partitions; p++ {
		o, ok := offs.Lookup("clicks", p)
		if !ok || o.At != 2*half/partitions {
			t.Errorf("partition %d committed at %v, want %d", p, o.At, 2*half/partitions)
		}
	}
}
