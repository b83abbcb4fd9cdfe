package broker

import (
	"math"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/cluster"
)

// PanicFor makes requests from clientID panic in place of their handler:
// on the read goroutine, or inside a later response when inLater is set.
// It returns the function restoring normal handling.
func PanicFor(clientID string, inLater bool) (restore func()) {
	hook := func(req *request) *pending {
		if req.ClientID != clientID {
			return nil
		}
		if inLater {
			return later(func() response { panic("test: handler panic in a later response") })
		}
		panic("test: handler panic")
	}
	testHookHandle.Store(&hook)
	return func() { testHookHandle.Store(nil) }
}

// SweepRetention runs one pass of the retention sweep now and returns the
// number of partitions it opened.
func (b *Broker) SweepRetention() int { return b.logs.SweepOnce(b.meta.Topics(), b.selfID, b.stopSync) }

// OpenPartitions is the number of open partition logs.
func (b *Broker) OpenPartitions() int {
	n, _ := b.logs.OpenCount()
	return n
}

// CountInlineWrites counts the responses the read loop writes itself from
// now on; stop ends the counting and returns the count.
func CountInlineWrites() (stop func() int64) {
	var n atomic.Int64
	restore := netserver.OnInlineWrite(func() { n.Add(1) })
	return func() int64 {
		restore()
		return n.Load()
	}
}

// testAPIs is an API registry built as New builds a broker's, for tests
// that decode or list APIs without a broker.
var testAPIs = sync.OnceValue(func() *kafkaapi.Registry { return (&Broker{}).newAPIs() })

// apiVersionsOf is the range of versions served of key (0..-1 for none).
func apiVersionsOf(key int16) kafkaapi.Versions {
	a, ok := testAPIs().Lookup(key)
	if !ok {
		return kafkaapi.Versions{Min: 0, Max: -1}
	}
	return a.Versions
}

// decodeRequest decodes a frame (after its size) as the connection layer
// does, against the broker's API registry.
func decodeRequest(frame []byte) (*request, error) {
	r, err := netserver.DecodeRequest(frame, testAPIs().Supports, checkBody)
	if err != nil {
		return nil, err
	}
	return &request{Request: r.Request, CorrelationID: r.CorrelationID, ClientID: r.ClientID}, nil
}

// testConn is a connection of b on a PLAINTEXT listener over nc, for
// handlers driven directly.
func testConn(b *Broker, nc net.Conn) *conn {
	return b.newConn(b.server.NewConn(Listener{Protocol: Plaintext}, nc))
}

// PauseReplication stops this broker's replica fetchers after their round
// in flight; resume (idempotent) starts them again.
func (b *Broker) PauseReplication() (resume func()) {
	return b.replicas.Pause()
}

// ReplicaDials and ReplicaRenewals are how many connections this broker's
// fetchers made to leaders, and how many times they logged in again on
// one before its SASL session ended.
func (b *Broker) ReplicaDials() int64    { return b.replicas.Counters().Dials }
func (b *Broker) ReplicaRenewals() int64 { return b.replicas.Counters().Renewals }

// EpochRequestsSent is how many OffsetForLeaderEpoch requests this
// broker's replica fetchers sent.
func (b *Broker) EpochRequestsSent() int64 { return b.replicas.Counters().EpochRequests }

// BeforeStrayCheck runs fn before any broker of this process reads from
// ZooKeeper the assignment of a partition it is about to delete as no
// longer its replica (broker/replication/stray.go), until the test ends.
func BeforeStrayCheck(t testing.TB, fn func(topic string, p int32)) {
	t.Cleanup(replication.BeforeStrayCheck(fn))
}

// ThrottledFetches is how many partition fetches this broker's
// replication throttles held back, as leader or as follower.
func (b *Broker) ThrottledFetches() int64 { return b.replicas.Counters().ThrottledFetches }

// LogEnds are this broker's copy of topic's partition p: the offset up to
// which it is fsynced and its log end offset (-1, -1 when it holds none).
func (b *Broker) LogEnds(topic string, p int32) (flushed, end int64) {
	t, ok := b.meta.Topic(topic)
	if !ok {
		return -1, -1
	}
	l, err := b.logs.Get(t, p)
	if err != nil {
		return -1, -1
	}
	return l.HighWatermark(), l.LogEndOffset()
}

// ReplicationThrottleSeen reports whether this broker has seen both
// halves of a replication throttle on topic's partition p for side
// ("leader" or "follower"): its rate set and itself listed among the
// throttled replicas. Both arrive through ZooKeeper watches, so a test
// waits for them before it starts the copy they are to slow down.
func (b *Broker) ReplicationThrottleSeen(topic string, p int32, side string) bool {
	t, ok := b.meta.Topic(topic)
	if !ok {
		return false
	}
	leader, follower := b.throttleRates()
	if side == "leader" {
		return leader != math.MaxInt64 && replication.ThrottledReplica(t.Configs, cluster.LeaderThrottledReplicas, p, b.selfID)
	}
	return follower != math.MaxInt64 && replication.ThrottledReplica(t.Configs, cluster.FollowerThrottledReplicas, p, b.selfID)
}

// MetadataChanged is the cluster view's Changed: closed at each published
// change (in standalone, each write of the topic registry).
func (b *Broker) MetadataChanged() <-chan struct{} { return b.meta.Changed() }
