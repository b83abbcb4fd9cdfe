package brokertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// Transformer is a consume-transform-produce application on kgo's
// GroupTransactSession (group and transactional id "transformer"): every
// record of in is copied to out in the same transaction as the group's
// offsets, so each is copied exactly once whatever fails in between. The
// broker tests run it against an in-process broker, the system tests
// against a process they kill.
type Transformer struct {
	addr     string
	in, out  string
	commits  atomic.Int64 // transactions committed
	stop     context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	lastErrs []string
}

// StartTransformer runs a Transformer until the test ends (or
// CheckCopiedOnce stops it).
func StartTransformer(t testing.TB, addr, in, out string) *Transformer {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &Transformer{addr: addr, in: in, out: out, stop: cancel, done: make(chan struct{})}
	go tr.run(ctx)
	t.Cleanup(tr.close)
	return tr
}

// Commits is the number of transactions committed so far.
func (tr *Transformer) Commits() int64 { return tr.commits.Load() }

// LastErrors are the last 20 errors the application saw, for a failure
// message.
func (tr *Transformer) LastErrors() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.lastErrs)
}

func (tr *Transformer) close() {
	tr.stop()
	<-tr.done
}

func (tr *Transformer) note(err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.lastErrs) == 20 {
		tr.lastErrs = tr.lastErrs[1:]
	}
	tr.lastErrs = append(tr.lastErrs, err.Error())
}

// run processes until stopped, making a new session whenever one fails
// for good (as an application restarts its instance).
func (tr *Transformer) run(ctx context.Context) {
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

func (tr *Transformer) session(ctx context.Context, sess *kgo.GroupTransactSession) {
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

// CheckCopiedOnce waits until out holds n distinct values, read at
// read_committed, stops tr, and fails on any value read twice or a count
// other than n.
func CheckCopiedOnce(t testing.TB, addr, out string, n int, tr *Transformer) {
	t.Helper()
	seen := map[string]int{}
	cl := NewClient(t, addr, kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	testenv.Eventuallyf(t, 120*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		return len(seen) >= n, fmt.Sprintf("%d of %d copied, %d commits; last errors %q", len(seen), n, tr.Commits(), tr.LastErrors())
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
