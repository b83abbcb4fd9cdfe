package system_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// kill -9 of a standalone broker holding committed, aborted and open
// transactions over many small segments: after the restart, recovery
// rebuilds the aborted index and the open transactions from the log, the
// coordinator aborts the open one at its timeout, and a read_committed
// consumer reads exactly the committed records, in order.
func TestTransactionsRecoverAfterKill(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	dir, addr, reg := t.TempDir(), testenv.FreeAddr(t), testenv.FreeAddr(t)
	start := func() *testenv.Process {
		p := testenv.StartProcess(t, "standalone", "--data-dir", dir, "--listen", addr, "--registry-listen", reg)
		testenv.WaitListening(t, p, addr, 60*time.Second)
		return p
	}
	p := start()
	const topic = "txn-killed"
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1024")}, topic); err != nil {
		t.Fatal(err)
	}
	txnClient := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
			kgo.TransactionTimeout(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	pad := strings.Repeat(".", 80)
	var want []string
	cl := txnClient("recovering")
	for i := range 12 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		commit := i%3 != 1
		for j := range 5 {
			v := fmt.Sprintf("t%d-%d", i, j)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v + " " + pad)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if commit {
				want = append(want, v)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	open := txnClient("left-open")
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for j := range 5 {
		if err := open.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "open-%d %s", j, pad)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p.Kill()
	start()

	// The open transaction holds read_committed consumers until the
	// restarted coordinator aborts it (3 s timeout); then everything
	// committed is read, and nothing else.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	quiet := time.Time{}
	for quiet.IsZero() || time.Now().Before(quiet) {
		if ctx.Err() != nil {
			t.Fatalf("read_committed read %d of %d records before the deadline: %v", len(got), len(want), got)
		}
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cons.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { got = append(got, strings.Fields(string(r.Value))[0]) })
		if len(got) >= len(want) && quiet.IsZero() {
			quiet = time.Now().Add(2 * time.Second)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("after kill -9 and restart read_committed read\n %v\nwant\n %v", got, want)
	}
}
