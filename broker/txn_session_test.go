package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// transformer is a consume-transform-produce application on kgo's
// GroupTransactSession: every record of in is copied to out in the same
// transaction as the group's offsets, so each is copied exactly once
// whatever fails in between.
type transformer struct {
	t        *testing.T
	addr     string
	in, out  string
	commits  atomic.Int64 // transactions committed
	stop     context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	lastErrs []string
}

func startTransformer(t *testing.T, addr, in, out string) *transformer {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &transformer{t: t, addr: addr, in: in, out: out, stop: cancel, done: make(chan struct{})}
	go tr.run(ctx)
	t.Cleanup(tr.close)
	return tr
}

func (tr *transformer) close() {
	tr.stop()
	<-tr.done
}

func (tr *transformer) note(err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.lastErrs) == 20 {
		tr.lastErrs = tr.lastErrs[1:]
	}
	tr.lastErrs = append(tr.lastErrs, err.Error())
}

// run processes until stopped, making a new session whenever one fails
// for good (as an application restarts its instance).
func (tr *transformer) run(ctx context.Context) {
	defer close(tr.done)
	for ctx.Err() == nil {
		sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(tr.addr), kgo.TransactionalID("transformer"),
			kgo.ConsumerGroup("transformer"), kgo.ConsumeTopics(tr.in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.TransactionTimeout(10*time.Second), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.RetryTimeout(30*time.Second))
		if err != nil {
			tr.note(err)
			continue
		}
		tr.session(ctx, sess)
		sess.Close()
	}
}

func (tr *transformer) session(ctx context.Context, sess *kgo.GroupTransactSession) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := sess.PollRecords(pctx, 100) // many small transactions: kills land inside some
		cancel()
		if fs.IsClientClosed() {
			return
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				tr.note(err)
			}
		})
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			tr.note(err)
			return
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Topic: tr.out, Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					tr.note(err)
				}
			})
		})
		ectx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		committed, err := sess.End(ectx, kgo.TryCommit)
		cancel()
		switch {
		case err != nil:
			tr.note(err)
			return
		case committed:
			tr.commits.Add(1)
		}
	}
}

// checkCopiedOnce waits until out holds each of want's values, read at
// read_committed, and fails on any value read twice or never sent.
func checkCopiedOnce(t *testing.T, addr, out string, n int, tr *transformer) {
	t.Helper()
	seen := map[string]int{}
	cl := newClient(t, addr, kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	testenv.Eventuallyf(t, 120*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(seen) >= n, fmt.Sprintf("%d of %d copied, %d commits; last errors %q", len(seen), n, tr.commits.Load(), tr.lastErrs)
	})
	tr.close()
	for v, c := range seen {
		if c != 1 {
			t.Errorf("%s copied %d times", v, c)
		}
	}
	if len(seen) != n {
		t.Errorf("%d values copied, want %d", len(seen), n)
	}
}

// kgo's GroupTransactSession copies a topic exactly once.
func TestGroupTransactSessionCopiesOnce(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "ctp-in", 3, nil)
	createTopic(t, b.Addr, "ctp-out", 3, nil)
	produceValues(t, b.Addr, "ctp-in", 0, 2000)
	tr := startTransformer(t, b.Addr, "ctp-in", "ctp-out")
	checkCopiedOnce(t, b.Addr, "ctp-out", 2000, tr)
	var sum int64
	committed(t, b.Addr, "transformer").Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != 2000 {
		t.Fatalf("the group committed offsets summing to %d, want 2000", sum)
	}
}

// The broker process is killed with SIGKILL (kill -9) several times while
// a GroupTransactSession copies a topic, and restarted on its data: every
// record is copied exactly once (no transaction half seen, none lost, no
// offset committed without its output or output without its offset).
func TestGroupTransactSessionSurvivesBrokerKill(t *testing.T) {
	dataDir, addr := t.TempDir(), testenv.FreeAddr(t)
	proc := startStandalone(t, dataDir, addr)
	createTopic(t, addr, "kill-in", 3, nil)
	createTopic(t, addr, "kill-out", 3, nil)
	const n = 6000
	produceValues(t, addr, "kill-in", 0, n)
	tr := startTransformer(t, addr, "kill-in", "kill-out")
	for kill := range 3 {
		target := tr.commits.Load() + 5
		testenv.Eventuallyf(t, 60*time.Second, func() (bool, string) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return tr.commits.Load() >= target, fmt.Sprintf("kill %d: %d commits, want %d; last errors %q", kill, tr.commits.Load(), target, tr.lastErrs)
		})
		proc.Kill()
		proc = startStandalone(t, dataDir, addr)
	}
	checkCopiedOnce(t, addr, "kill-out", n, tr)
}
