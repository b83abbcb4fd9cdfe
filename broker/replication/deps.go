package replication

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/clientsec"
)

// Deps is what replication is built from: the few things it needs of the
// broker, given by broker.New.
type Deps struct {
	Self int32            // this broker's id
	Meta cluster.Metadata // the cluster view; ZooKeeper's also records ISRs
	Logs *partition.Table // the partition table
	// Repair is the repairs of damaged replicas in progress; the partition
	// table's Hooks (NewRepair).
	Repair  *Repair
	DataDir string // where the high-watermark checkpoint is kept
	// LagMax is how long a follower may lag before it leaves the ISR
	// (replica.lag.time.max.ms).
	LagMax time.Duration
	Logger *slog.Logger
	// InterBroker is this broker's client security towards its leaders,
	// Listener the leaders' listener it fetches from.
	InterBroker clientsec.Kafka
	Listener    netserver.SecurityProtocol
	// Stop is closed when background work is to end, Closing when
	// shutdown starts (waits in flight end).
	Stop, Closing <-chan struct{}
	// MinISR is t's min.insync.replicas, at least 1.
	MinISR func(t cluster.Topic) int
	// ThrottleRates are the leader and follower replication rates
	// (dynamic broker configs); nil: unthrottled.
	ThrottleRates func() (leader, follower int64)
}

// env is Deps as the package reads it.
type env struct {
	selfID   int32
	meta     cluster.Metadata
	logs     *partition.Table
	repair   *Repair
	dataDir  string
	logger   *slog.Logger
	sec      clientsec.Kafka
	listener netserver.SecurityProtocol
	stopSync <-chan struct{}
	closing  <-chan struct{}
	minISRFn func(t cluster.Topic) int
	rates    func() (leader, follower int64)
}

func newEnv(d Deps) *env {
	e := &env{
		selfID: d.Self, meta: d.Meta, logs: d.Logs, repair: d.Repair, dataDir: d.DataDir, logger: d.Logger,
		sec: d.InterBroker, listener: d.Listener, stopSync: d.Stop, closing: d.Closing,
		minISRFn: d.MinISR, rates: d.ThrottleRates,
	}
	if e.logger == nil {
		e.logger = slog.New(slog.DiscardHandler)
	}
	return e
}

// minISR is the topic's min.insync.replicas.
func (e *env) minISR(t cluster.Topic) int {
	if e.minISRFn == nil {
		return 1
	}
	return max(e.minISRFn(t), 1)
}

// hwQuorum is how many in-sync replicas partition p needs for its high
// watermark to move: min.insync.replicas, or every replica when it has
// fewer (a setting no write could meet must not hide every record).
func (e *env) hwQuorum(t cluster.Topic, p int32) int {
	return min(e.minISR(t), max(len(t.ReplicasOf(p)), 1))
}

// throttleRates are this broker's leader and follower replication rates.
func (e *env) throttleRates() (leader, follower int64) {
	if e.rates == nil {
		return math.MaxInt64, math.MaxInt64
	}
	return e.rates()
}

// ctx returns a context cancelled when the broker starts shutting down.
func (e *env) ctx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	if e.closing == nil {
		return ctx, cancel
	}
	go func() {
		select {
		case <-e.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
