package settings

// Dynamic broker configs on this broker: the current state (the model
// and its stores are broker/brokerconfig), loaded at start and on every
// change, applied to the open partitions and the connection limits.

import (
	"maps"
	"math"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/kafkaerr"
)

// dynamicConfigs holds the current state and where it is stored.
type dynamicConfigs struct {
	store  brokerconfig.Store
	loadMu sync.Mutex
	state  atomic.Pointer[brokerconfig.State]
	// applyMu makes applying the state to the open partitions one at a
	// time, each reading the newest state once it holds the lock, so an
	// older state never lands after a newer one.
	applyMu sync.Mutex
}

// Load reads the stored configs and makes them current,
// for the partitions opened from now on too. A value that does not apply
// (written by another version of Tributary) is skipped with a warning
// rather than keeping the broker from starting.
func (b *Broker) Load() error {
	// Reads and stores in one order, so the last stored is the last read
	// even when a watch and an alter reload at once.
	b.dyn.loadMu.Lock()
	defer b.dyn.loadMu.Unlock()
	def, own, err := b.dyn.store.Load()
	if err != nil {
		return err
	}
	st := &brokerconfig.State{Def: def, Own: own, Static: b.static}
	var errs, more []error
	st.Eff, errs = brokerconfig.ApplyLevel(st.Static, def)
	st.Eff, more = brokerconfig.ApplyLevel(st.Eff, own)
	for _, e := range append(errs, more...) {
		b.logger.Warn("ignoring a stored dynamic broker config", "err", e)
	}
	b.dyn.state.Store(st)
	b.logs.SetBase(st.Eff.Topic.Log)
	if c, ok := b.meta.(uncleanElector); ok {
		c.SetUncleanLeaderElection(st.Eff.Topic.Unclean)
	}
	return nil
}

// uncleanElector is the cluster metadata whose controller elects leaders
// (cluster.ZooKeeper): it is told the broker-wide
// unclean.leader.election.enable, which only it acts on.
type uncleanElector interface{ SetUncleanLeaderElection(on bool) }

// ConnLimits are max.connections and max.connections.per.ip as they are
// now: a change applies to the next connection accepted.
func (b *Broker) ConnLimits() (maxConns, perIP int) {
	maxConns, perIP = b.static.MaxConns, b.static.MaxConnsPerIP
	if st := b.dyn.state.Load(); st != nil {
		maxConns, perIP = st.Eff.MaxConns, st.Eff.MaxConnsPerIP
	}
	return maxConns, brokerconfig.PerIPLimit(maxConns, perIP)
}

// Now is the current state of the dynamic broker configs; nil before
// Load.
func (b *Broker) Now() *brokerconfig.State { return b.dyn.state.Load() }

// ThrottleRates are this broker's leader and follower replication rates.
func (b *Broker) ThrottleRates() (leader, follower int64) {
	if st := b.Now(); st != nil {
		return st.Eff.LeaderThrottleRate, st.Eff.FollowerThrottleRate
	}
	return math.MaxInt64, math.MaxInt64
}

// Reload rereads the stored configs and applies them to the open
// partitions: after a change through this broker, or a ZooKeeper watch
// reporting one through another.
func (b *Broker) Reload() {
	if err := b.Load(); err != nil {
		b.logger.Error("reading dynamic broker configs failed; keeping the last ones read", "err", err)
		return
	}
	b.ReconfigureAll()
}

// AlterBrokerConfigs changes the configs of the broker resource name
// (this broker's id, or "": the cluster-wide default) to what change makes
// of them; an error is broker/kafkaerr's.
func (b *Broker) AlterBrokerConfigs(name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	if err := b.checkBrokerResource(name); err != nil {
		return err
	}
	own := name != ""
	checked := func(cur map[string]string) (map[string]string, error) {
		next, err := change(maps.Clone(cur))
		if err != nil {
			return nil, err
		}
		if err := brokerconfig.Check(next); err != nil {
			return nil, err
		}
		if err := b.checkBrokerConfigBounds(next); err != nil {
			return nil, err
		}
		return next, nil
	}
	if validateOnly {
		st := b.Now()
		cur := st.Def
		if own {
			cur = st.Own
		}
		_, err := checked(cur)
		return err
	}
	next, err := b.dyn.store.Update(own, checked)
	if err != nil {
		if kafkaerr.Code(err) != kerr.UnknownServerError.Code {
			return err // refused by change or the checks
		}
		b.logger.Error("storing dynamic broker configs", "resource", name, "err", err)
		return kafkaerr.New(kerr.UnknownServerError, "storing broker configs: %v", err)
	}
	b.Reload()
	entity := "the cluster-wide default"
	if own {
		entity = "broker " + name
	}
	b.logger.Info("dynamic broker configs changed", "entity", entity, "configs", next)
	return nil
}
