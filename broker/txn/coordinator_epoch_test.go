package txn

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memBackend keeps __transaction_state in memory for the coordinator's
// unit tests: every state partition is led by "this broker" in epoch
// (-1: led elsewhere), as a broker's replicas would say.
type memBackend struct {
	mu       sync.Mutex
	readGate func(p int32) // called before a read of partition p, unlocked
	epoch    int32
	recs     map[int32][]Record
	markers  []markerCall
	pids     int64
	// refuse, when set, names partitions whose next marker fails.
	refuse map[TP]bool
}

type markerCall struct {
	producerID int64
	epoch      int16
	commit     bool
	coordEpoch int32
	parts      []TP
}

var errLedElsewhere = errors.New("this broker does not lead the state partition in that epoch")

func (b *memBackend) AppendState(_ context.Context, p int32, epoch int32, recs []Record) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.epoch < 0 || epoch != b.epoch {
		return errLedElsewhere
	}
	if b.recs == nil {
		b.recs = map[int32][]Record{}
	}
	b.recs[p] = append(b.recs[p], recs...)
	return nil
}

func (b *memBackend) ReadState(_ context.Context, p int32) ([]Record, error) {
	if b.readGate != nil {
		b.readGate(p)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Record(nil), b.recs[p]...), nil
}

func (b *memBackend) WriteMarkers(_ context.Context, pid int64, epoch int16, commit bool, coordEpoch int32, parts []TP) ([]TP, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.markers = append(b.markers, markerCall{pid, epoch, commit, coordEpoch, parts})
	var failed []TP
	for _, tp := range parts {
		if b.refuse[tp] {
			delete(b.refuse, tp)
			failed = append(failed, tp)
		}
	}
	if failed != nil {
		return failed, errors.New("the leader refused the marker")
	}
	return nil, nil
}

func (b *memBackend) CommitOffsets(context.Context, string, map[TP]Offset) error { return nil }

func (b *memBackend) NewProducerID() (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pids++
	return b.pids, nil
}

func (b *memBackend) StateEpoch(context.Context, int32) (int32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.epoch < 0 {
		return 0, errLedElsewhere
	}
	return b.epoch, nil
}

func (b *memBackend) setEpoch(e int32) {
	b.mu.Lock()
	b.epoch = e
	b.mu.Unlock()
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestCoordinator(t *testing.T, be Backend, clock *testClock) *Coordinator {
	c := New(be, Config{CheckInterval: time.Hour, Clock: clock.Now, Logger: quietLogger()})
	t.Cleanup(c.Close)
	return c
}

// A coordinator that lost its state partition and got it back in a later
// leader epoch decides nothing from what it remembers of the earlier one:
// meanwhile another coordinator ended that transaction and the producer
// opened the next. The Jepsen test of transactions lost a committed
// transaction's records in one partition this way: the returning
// coordinator's timeout check wrote an abort of the remembered (long
// finished) transaction at a bumped epoch, the reload read it back as the
// id's state and its markers aborted the producer's open transaction.
func TestReturningCoordinatorDecidesNothingFromItsOldState(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: time.UnixMilli(1_700_000_000_000)}
	be := &memBackend{epoch: 1}
	old := newTestCoordinator(t, be, clock)
	pid, epoch, kerr := old.InitProducerID(ctx, "app", 10_000, -1, -1)
	if kerr != nil {
		t.Fatal(kerr)
	}
	if kerr := old.AddPartitions(ctx, "app", pid, epoch, []TP{{"t", 0}}); kerr != nil {
		t.Fatal(kerr)
	}

	// Another broker coordinates in epoch 2: the transaction commits and
	// the next one opens on another partition.
	be.setEpoch(2)
	other := newTestCoordinator(t, be, clock)
	if kerr := other.EndTxn(ctx, "app", pid, epoch, true); kerr != nil {
		t.Fatal(kerr)
	}
	if kerr := other.AddPartitions(ctx, "app", pid, epoch, []TP{{"t", 1}}); kerr != nil {
		t.Fatal(kerr)
	}
	be.mu.Lock()
	written, markers := len(be.recs[PartitionFor("app", 50)]), len(be.markers)
	be.mu.Unlock()

	// The first broker leads the state partition again, in epoch 3, and
	// its timeout check runs before any request made it read the state.
	be.setEpoch(3)
	clock.advance(time.Minute)
	old.checkOnce()
	be.mu.Lock()
	if n := len(be.recs[PartitionFor("app", 50)]); n != written {
		t.Errorf("the returning coordinator wrote %d state records from its old state", n-written)
	}
	if len(be.markers) != markers {
		t.Errorf("the returning coordinator wrote markers %v from its old state", be.markers[markers:])
	}
	be.mu.Unlock()

	d, ok, err := old.Describe(ctx, "app")
	if err != nil || !ok {
		t.Fatalf("describe: %v %v", ok, err)
	}
	if d.State != Ongoing || d.Epoch != epoch || len(d.Partitions) != 1 || d.Partitions[0] != (TP{"t", 1}) {
		t.Fatalf("after the reload the transaction is %s at epoch %d on %v; want the other coordinator's: Ongoing at epoch %d on [{t 1}]",
			d.State, d.Epoch, d.Partitions, epoch)
	}
}

// A slow read of one state partition (a large one after a failover)
// holds up only the ids placed in it: an id of another partition is
// served meanwhile.
func TestSlowStateLoadStallsOnlyItsPartition(t *testing.T) {
	ctx := context.Background()
	slow, other := "app", "other"
	for PartitionFor(other, 50) == PartitionFor(slow, 50) {
		other += "x"
	}
	release := make(chan struct{})
	reading := make(chan struct{}, 1)
	be := &memBackend{epoch: 1, readGate: func(p int32) {
		if p == PartitionFor(slow, 50) {
			reading <- struct{}{}
			<-release
		}
	}}
	c := newTestCoordinator(t, be, &testClock{now: time.UnixMilli(1_700_000_000_000)})
	slowDone := make(chan *kerr.Error, 1)
	go func() {
		_, _, err := c.InitProducerID(ctx, slow, 10_000, -1, -1)
		slowDone <- err
	}()
	<-reading
	otherDone := make(chan *kerr.Error, 1)
	go func() {
		_, _, err := c.InitProducerID(ctx, other, 10_000, -1, -1)
		otherDone <- err
	}()
	select {
	case err := <-otherDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("an id of another state partition waited for the slow load")
	}
	close(release)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
}
