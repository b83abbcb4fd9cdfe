package txnapi

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/kafkaapi"
)

// TestRegisterAddsEveryTransactionAPI: Register puts each API of this
// package in the broker's registry, and New needs nothing served to build
// them (the broker builds its registry before it serves).
func TestRegisterAddsEveryTransactionAPI(t *testing.T) {
	r := kafkaapi.NewRegistry()
	New(Config{}).Register(r)
	// FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
	// EndTxn, WriteTxnMarkers, TxnOffsetCommit, DescribeProducers,
	// DescribeTransactions, ListTransactions.
	want := []int16{10, 22, 24, 25, 26, 27, 28, 61, 65, 66}
	if got := r.Keys(); !slices.Equal(got, want) {
		t.Fatalf("registered keys %v, want %v", got, want)
	}
}

// TestCodeSpeaksTheVersionsLanguage: a fenced producer is PRODUCER_FENCED
// from the version that knows it, INVALID_PRODUCER_EPOCH before.
func TestCodeSpeaksTheVersionsLanguage(t *testing.T) {
	for _, c := range []struct {
		err     *kerr.Error
		version int16
		want    int16
	}{
		{nil, 0, 0},
		{kerr.ProducerFenced, 1, kerr.InvalidProducerEpoch.Code},
		{kerr.ProducerFenced, 2, kerr.ProducerFenced.Code},
		{kerr.ConcurrentTransactions, 0, kerr.ConcurrentTransactions.Code},
	} {
		if got := Code(c.err, c.version, 2); got != c.want {
			t.Errorf("Code(%v, v%d) = %d, want %d", c.err, c.version, got, c.want)
		}
	}
}

// TestContextEndsWhenTheBrokerCloses: a request's work stops at shutdown,
// not 30 seconds later.
func TestContextEndsWhenTheBrokerCloses(t *testing.T) {
	closing := make(chan struct{})
	ctx, cancel := Context(closing)
	defer cancel()
	if ctx.Err() != nil {
		t.Fatal("context done before the broker closed")
	}
	close(closing)
	<-ctx.Done() // the test's deadline catches a context that never ends
}
