package cluster

// The controller: one broker of the cluster, elected through the
// ephemeral /controller node, moves the leadership of replicated
// partitions away from brokers that died.
//
// Winning the node increments the persistent /controller_epoch, and every
// state write of the controller is a ZooKeeper multi that also checks that
// node's version: a controller that lost its session (and so its node)
// but has not noticed yet cannot write once another has won, because the
// winner's increment changed the version it checks.
//
// On every change of the broker registry, the topics or a state node, the
// controller looks at each replicated partition:
//   - leader dead (or none): the first replica, in assignment order, that
//     is in the ISR and alive becomes leader, the leader epoch grows by
//     one, and the dead brokers leave the ISR. With no live ISR member the
//     leader becomes -1 and the ISR stays as it was, so that only a broker
//     that held every acknowledged record may lead: the partition stays
//     offline until an ISR member returns.
//   - unless the topic's unclean.leader.election.enable is true (its own
//     config, else the broker default SetUncleanLeaderElection gives,
//     false unless changed): then, with no live ISR member, the first
//     live replica leads, alone in the ISR, with the next epoch. It
//     trades the records acknowledged above its log end (they are lost,
//     and a warning says so) for availability. Turning the config on for
//     an offline partition elects at once: a topic config change, like
//     the broker default's, wakes the controller.
//   - leader alive, some ISR members dead: they leave the ISR (same
//     epoch), so acks=all stops waiting for them at once rather than after
//     replica.lag.time.max.ms.
//   - leader alive but no longer a replica (a reassignment moved the
//     partition off it, or was cancelled): elected away as if dead.
//   - a broker alive in another broker epoch than the state records
//     (it restarted, brokerepochs.go) counts as dead for all of the
//     above, except that when no valid in-sync replica is alive, a
//     restarted one leads (the old leader first), alone in the ISR, with
//     the next leader epoch and a warning.
//
// Besides, it moves leaderships back to preferred leaders
// (preferred.go) and carries reassignments through (reassign.go).

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
)

// controllerResweep re-reads everything this often even without a watch
// firing: a safety net for writes lost to connection trouble.
const controllerResweep = 5 * time.Second

type controller struct {
	z *ZooKeeper
	// watch is the cluster view's (ZKWatch.Subscribe): wake hears its
	// firings, and the controller's own wake-ups.
	watch        *ZKWatch
	wake         chan struct{}
	active       bool
	epoch        int32
	epochVersion int32 // version of /controller_epoch after our increment

	rebalance     time.Duration // automatic preferred-leader election period; 0: off
	lastRebalance time.Time

	// recovering holds when each offline partition awaiting its in-sync
	// replicas' log ends was first seen so (logends.go).
	recovering map[TopicPartition]time.Time

	// pending are the round's state writes not yet sent, prefetched the
	// state nodes read at its start (controller_batch.go).
	pending    []queuedWrite
	prefetched map[string]stateRead
	roundStart time.Time // when the round writing them began

	// unreadable is the undecodable /controller content last warned
	// about: a round runs on every change in the cluster, and the
	// operator needs one line per bad content, not one per round.
	unreadable string
}

// runController contends for /controller until Close and, while it holds
// it, keeps the replicated partitions led.
func (z *ZooKeeper) runController() {
	defer z.wg.Done()
	c := &controller{z: z, watch: z.watch, wake: z.watch.Subscribe(), rebalance: z.rebalance, lastRebalance: time.Now(),
		recovering: map[TopicPartition]time.Time{}}
	resweep := controllerResweep
	if c.rebalance > 0 {
		resweep = min(resweep, c.rebalance)
	}
	for {
		changed := z.Changed()
		err := c.round()
		select {
		case <-z.stop:
			return
		default:
		}
		if err != nil {
			z.log.Warn("controller round failed; retrying", "err", err)
		}
		select {
		case <-z.stop:
			return
		case <-c.wake:
		case <-changed: // a new replicated topic or topic config, say
		case <-z.reelect: // the unclean default changed
		case <-time.After(resweep):
		}
	}
}

// round takes the controller role if it is free and, holding it, elects
// leaders where needed.
func (c *controller) round() error {
	z := c.z
	path := z.s.Paths.Controller()
	data, _, ok, err := c.watch.Get(path)
	if err != nil {
		return err
	}
	if !ok {
		z.controller.Store(-1)
		c.active = false
		if err := c.win(); err != nil || !c.active {
			return err
		}
		return c.elect()
	}
	n, err := DecodeControllerNode(data)
	if err != nil {
		// Not deleted: its owner's session ends it, or an operator does.
		if string(data) != c.unreadable {
			z.log.Warn("ignoring unreadable controller node: no broker is controller until it is removed", "path", path, "err", err)
			c.unreadable = string(data)
		}
		n.BrokerID = -1
	}
	z.controller.Store(n.BrokerID)
	if n.BrokerID != z.self.ID {
		if c.active {
			z.log.Info("no longer the controller", "controller", n.BrokerID)
		}
		c.active = false
		return nil
	}
	if !c.active {
		// Ours but fenced (another election raised the epoch meanwhile):
		// give it up so that a new election runs. Ours from an earlier
		// session: wait for it to expire.
		if _, stat, err := z.s.Conn.Get(path); err == nil && stat.EphemeralOwner == z.s.Conn.SessionID() {
			if err := z.s.Conn.Delete(path, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
		return nil
	}
	return c.elect()
}

// win creates /controller and, if this broker got it, increments the
// controller epoch.
func (c *controller) win() error {
	z := c.z
	if err := z.s.EnsurePath(z.s.Paths.Root + "/brokers/topics"); err != nil {
		return err
	}
	_, err := z.s.Conn.Create(z.s.Paths.Controller(), controllerNodeData(z.self.ID), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	if err != nil {
		return err
	}
	for {
		epoch, version, err := z.readControllerEpoch()
		if err != nil {
			return err
		}
		next := []byte(strconv.Itoa(int(epoch) + 1))
		var stat *zk.Stat
		if version < 0 {
			_, err = z.s.Conn.Create(z.s.Paths.ControllerEpoch(), next, 0, zk.WorldACL(zk.PermAll))
			stat = &zk.Stat{Version: 0}
		} else {
			stat, err = z.s.Conn.Set(z.s.Paths.ControllerEpoch(), next, version)
		}
		if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if err != nil {
			return err
		}
		c.active, c.epoch, c.epochVersion = true, epoch+1, stat.Version
		z.controller.Store(z.self.ID)
		z.log.Info("elected controller", "controller_epoch", c.epoch)
		return nil
	}
}

// elect applies the rules in the file comment to every replicated
// partition, then runs the elections asked for on demand and the
// reassignments' next steps.
func (c *controller) elect() error {
	z := c.z
	c.roundStart = time.Now()
	ids, err := c.watch.Children(z.s.Paths.BrokerIDs())
	if err != nil {
		return err
	}
	// Epochs are read afresh every round (brokerepochs.go).
	live, err := z.readBrokerEpochs(ids)
	if err != nil {
		return err
	}
	asked, askedVersion, err := c.askedElections()
	if err != nil {
		return err
	}
	rebalance := c.rebalance > 0 && time.Since(c.lastRebalance) >= c.rebalance
	// The replica lists come from this broker's view (a reassignment's
	// writes reach it through the watch); the states are read afresh and
	// watched, all at once before the partitions are looked at.
	topics := z.Topics()
	c.pending = c.pending[:0]
	defer func() { c.prefetched = nil }()
	if err := c.prefetchStates(topics); err != nil {
		return err
	}
	for _, t := range topics {
		if !t.Replicated() {
			continue
		}
		for p, replicas := range t.Replicas {
			tp := TopicPartition{t.Name, int32(p)}
			_, reassigning := t.Reassigning[int32(p)]
			mode, ok := asked.mode(tp)
			if !ok && rebalance && !reassigning {
				mode = electPreferred
			}
			if err := c.electPartition(t, int32(p), replicas, live, mode); err != nil {
				return err
			}
			if c.active && reassigning {
				// It reads the state electPartition may have queued.
				if err := c.flushWrites(); err != nil {
					return err
				}
				if err := c.reassignStep(t, int32(p), live); err != nil {
					return err
				}
			}
			if !c.active {
				return nil
			}
		}
	}
	if err := c.flushWrites(); err != nil || !c.active {
		return err
	}
	if rebalance {
		c.lastRebalance = time.Now()
	}
	if askedVersion >= 0 {
		return c.electionsDone(askedVersion)
	}
	return nil
}

// electMode is what electPartition does beyond the rules every round
// applies.
type electMode int

const (
	electNone      electMode = iota
	electPreferred           // move the leadership to the preferred replica if it is alive and in sync
	electUnclean             // no live in-sync replica: let a live out-of-sync one lead
	electAway                // move the leadership away from its (damaged) leader (stepdown.go)
)

func (c *controller) electPartition(t Topic, p int32, replicas []int32, live liveBrokers, mode electMode) error {
	topic := t.Name
	z := c.z
	path := z.s.Paths.PartitionState(topic, p)
	data, version, ok, err := c.readState(path)
	if err != nil || !ok {
		return err
	}
	st, err := DecodePartitionStateNode(data)
	if err != nil {
		z.log.Warn("controller: unreadable partition state", "topic", topic, "partition", p, "err", err)
		return nil
	}
	// An unclean election asked for on demand (ElectLeaders) is done
	// whatever the topic's setting; otherwise the setting decides.
	asked := mode == electUnclean
	next, changed := nextState(st, replicas, live, asked || z.uncleanAllowed(t))
	if mode == electPreferred {
		var moved bool
		if next, moved = preferredState(next, replicas, live); moved {
			changed = true
		}
	}
	if mode == electAway {
		var moved bool
		if next, moved = awayState(next, replicas, live); moved {
			changed = true
		}
	}
	// No in-sync replica is alive in its recorded incarnation, nor an
	// eligible one: the longest log of the restarted ones leads
	// (logends.go).
	var ends map[int32]LogEndReport
	if changed && next.Leader >= 0 && st.restarted(next.Leader, live) {
		if next, changed, ends, err = c.recoverLongest(topic, p, st, replicas, live); err != nil {
			return err
		}
	}
	if !changed {
		return nil
	}
	c.queue(&zk.SetDataRequest{Path: path, Data: encodeState(c.stamp(next)), Version: version}, func() {
		c.reportChange(topic, p, st, next, live, ends, asked)
	})
	return nil
}

// reportChange logs a state change electPartition decided, once written.
func (c *controller) reportChange(topic string, p int32, st, next PartitionState, live liveBrokers, ends map[int32]LogEndReport, asked bool) {
	z := c.z
	if next.Leader < 0 && st.Leader >= 0 && st.restarted(st.Leader, live) {
		z.log.Warn("every in-sync replica restarted: the partition is offline until they report their log ends, and the longest leads",
			"topic", topic, "partition", p, "leader_epoch", next.LeaderEpoch, "isr", next.ISR, "old_leader", st.Leader)
		return
	}
	if next.Leader >= 0 && st.restarted(next.Leader, live) {
		z.log.Warn("a restarted broker leads alone, with the longest log its in-sync replicas reported: no in-sync replica is alive in its recorded incarnation; records above its log end are lost",
			"topic", topic, "partition", p, "leader", next.Leader, "leader_epoch", next.LeaderEpoch, "broker_epoch", next.LeaderBrokerEpoch,
			"log_ends", fmt.Sprint(ends), "old_isr", st.ISR, "old_leader", st.Leader)
		return
	}
	for _, id := range st.ISR {
		if st.restarted(id, live) {
			z.log.Warn("a restarted broker left the isr: it may have lost records it held", "topic", topic, "partition", p, "broker", id,
				"recorded_broker_epoch", st.recordedEpoch(id), "broker_epoch", live[id])
		}
	}
	if next.Leader >= 0 && next.Leader != st.Leader && slices.Contains(st.ELR, next.Leader) {
		z.log.Warn("an eligible leader replica leads: no in-sync replica is alive in the incarnation the isr records, and this one left the isr under min.insync.replicas holding every acknowledged record",
			"topic", topic, "partition", p, "leader", next.Leader, "leader_epoch", next.LeaderEpoch, "old_isr", st.ISR, "old_leader", st.Leader)
		return
	}
	if next.Leader >= 0 && next.Leader != st.Leader && !slices.Contains(st.ISR, next.Leader) {
		why := "unclean.leader.election.enable is true"
		if asked {
			why = "asked for by ElectLeaders"
		}
		z.log.Warn("unclean leader election: a replica outside the ISR leads; records acknowledged above its log end are lost, and the old leader truncates them when it returns",
			"reason", why, "topic", topic, "partition", p, "leader", next.Leader, "leader_epoch", next.LeaderEpoch, "old_isr", st.ISR, "old_leader", st.Leader)
		return
	}
	// One line per partition only at debug: a broker's failure changes
	// thousands; flushWrites sums them up.
	z.log.Debug("partition state changed by the controller", "topic", topic, "partition", p,
		"leader", next.Leader, "leader_epoch", next.LeaderEpoch, "isr", next.ISR, "was_leader", st.Leader)
}

// stamp marks a state as written by this controller.
func (c *controller) stamp(st PartitionState) PartitionState {
	st.ControllerEpoch = c.epoch
	return st
}

// write runs ops in a multi that also checks the controller epoch. A
// fenced controller (the epoch moved on) steps down: c.active false, nil
// error. Another failure (a node changed meanwhile) is returned; the
// watch brings the controller back to it.
func (c *controller) write(ops ...any) error {
	err := c.send(ops)
	if err == nil {
		c.wrote(ops)
		return nil
	}
	if c.fenced() {
		return nil
	}
	return err
}

// send runs ops in a multi that also checks the controller epoch; safe
// for concurrent use.
func (c *controller) send(ops []any) error {
	ops = append([]any{&zk.CheckVersionRequest{Path: c.z.s.Paths.ControllerEpoch(), Version: c.epochVersion}}, ops...)
	controllerMultis.Add(1)
	_, err := c.z.s.Conn.Multi(ops...)
	return err
}

// wrote drops what the round's watch kept of the nodes ops wrote: it is
// now old.
func (c *controller) wrote(ops []any) {
	for _, op := range ops {
		switch op := op.(type) {
		case *zk.SetDataRequest:
			c.watch.Forget(op.Path)
		case *zk.CreateRequest:
			c.watch.Forget(op.Path)
		case *zk.DeleteRequest:
			c.watch.Forget(op.Path)
		}
	}
}

// fenced reports, after a failed write, whether the controller epoch
// moved on; if so the controller steps down (c.active false) and the next
// round gives up the node.
func (c *controller) fenced() bool {
	z := c.z
	if _, v, rerr := z.readControllerEpoch(); rerr == nil && v != c.epochVersion {
		z.log.Warn("controller fenced: the controller epoch moved on", "controller_epoch", c.epoch)
		c.active = false
		notify(c.wake) // next round: give up the node
		return true
	}
	return false
}

// Controller is the id of the elected controller as this broker last read
// it; ok false while there is none or it is not known yet.
func (z *ZooKeeper) Controller() (id int32, ok bool) {
	id = z.controller.Load()
	return id, id >= 0
}
