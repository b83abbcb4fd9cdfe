package txn

import (
	"context"
	"slices"
	"testing"
	"time"
)

// A completion whose markers failed in one partition retries that
// partition alone: the partitions that already hold the marker get no
// second one (each would be a record every consumer reads past).
func TestMarkerRetryWritesOnlyTheFailedPartitions(t *testing.T) {
	ctx := context.Background()
	parts := []TP{{"t", 0}, {"t", 1}, {"t", 2}}
	be := &memBackend{epoch: 1, refuse: map[TP]bool{{"t", 1}: true}}
	c := newTestCoordinator(t, be, &testClock{now: time.UnixMilli(1_700_000_000_000)})
	pid, epoch, kerr := c.InitProducerID(ctx, "app", 10_000, -1, -1)
	if kerr != nil {
		t.Fatal(kerr)
	}
	if kerr := c.AddPartitions(ctx, "app", pid, epoch, parts); kerr != nil {
		t.Fatal(kerr)
	}
	if kerr := c.EndTxn(ctx, "app", pid, epoch, true); kerr != nil {
		t.Fatal(kerr) // decided: the failed marker is retried in the background
	}
	if d, _, _ := c.Describe(ctx, "app"); d.State != PrepareCommit {
		t.Fatalf("after a failed marker the transaction is %s; want PrepareCommit", d.State)
	}
	c.checkOnce()
	if d, _, _ := c.Describe(ctx, "app"); d.State != CompleteCommit {
		t.Fatalf("after the retry the transaction is %s; want CompleteCommit", d.State)
	}

	be.mu.Lock()
	defer be.mu.Unlock()
	if len(be.markers) != 2 {
		t.Fatalf("marker calls %v; want the first and one retry", be.markers)
	}
	if !slices.Equal(be.markers[0].parts, parts) {
		t.Errorf("first marker call wrote %v; want %v", be.markers[0].parts, parts)
	}
	if want := []TP{{"t", 1}}; !slices.Equal(be.markers[1].parts, want) {
		t.Errorf("the retry wrote markers to %v; want only the failed %v", be.markers[1].parts, want)
	}
	for _, m := range be.markers {
		if !m.commit || m.epoch != epoch || m.producerID != pid {
			t.Errorf("marker call %+v; want a commit at producer %d epoch %d", m, pid, epoch)
		}
	}
}
