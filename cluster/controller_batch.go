package cluster

// The controller's round at thousands of partitions. A round used to read
// each partition's state node and write each change one round trip after
// the other: when a broker leading 1,000 partitions died, electing their
// new leaders took 1,000 reads and 1,000 multis in turn, about 20 s past
// the session timeout. Now a round reads every state node first,
// pipelined (inParallel, zkmany.go), and queues its writes, sending them
// controllerWriteBatch to a multi (each still checking its node's version
// and the controller epoch). A batch that fails because one node changed
// meanwhile is written again one change at a time, so one partition's
// conflict never holds back the others; what still fails is retried by
// the next round, which the watch on that node triggers.

import (
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// controllerWriteBatch bounds the state writes of one multi: a state node
// is a few hundred bytes, far below ZooKeeper's 1 MB request limit.
const controllerWriteBatch = 200

// queuedWrite is a state write decided by the round, and what to log once
// it is done.
type queuedWrite struct {
	op   *zk.SetDataRequest
	done func()
}

// stateRead is a state node as the round read it.
type stateRead struct {
	data    []byte
	version int32
	ok      bool
}

// prefetchStates reads the state node of every replicated partition of
// topics, pipelined, and watches them, for readState.
func (c *controller) prefetchStates(topics []Topic) error {
	var paths []string
	for _, t := range topics {
		if !t.Replicated() {
			continue
		}
		for p := range t.Replicas {
			paths = append(paths, c.z.s.Paths.PartitionState(t.Name, int32(p)))
		}
	}
	reads := make([]stateRead, len(paths))
	if err := inParallel(len(paths), func(i int) error {
		var err error
		reads[i].data, reads[i].version, reads[i].ok, err = c.watch.Get(paths[i])
		return err
	}); err != nil {
		return err
	}
	c.prefetched = make(map[string]stateRead, len(paths))
	for i, p := range paths {
		c.prefetched[p] = reads[i]
	}
	return nil
}

// readState is the state node at path as read at the start of the round,
// or read now if it was not.
func (c *controller) readState(path string) ([]byte, int32, bool, error) {
	if r, ok := c.prefetched[path]; ok {
		return r.data, r.version, r.ok, nil
	}
	return c.watch.Get(path)
}

// queue adds a state write to the round's batch.
func (c *controller) queue(op *zk.SetDataRequest, done func()) {
	c.pending = append(c.pending, queuedWrite{op: op, done: done})
}

// flushWrites sends the queued writes, controllerWriteBatch to a multi,
// all multis at once (the client pipelines them on its connection, and
// ZooKeeper commits them together: one after the other, the 15 multis of a
// dead broker's 3,000 partition changes each waited for a commit of their
// own), and drops the prefetched states they replace. It returns the first
// failure of a single write (the round is then retried); a fenced
// controller stops with c.active false and nil.
func (c *controller) flushWrites() error {
	var first error
	written := 0
	defer func() {
		if written > 0 {
			c.z.log.Info("partition states changed by the controller", "partitions", written, "controller_epoch", c.epoch,
				"round_took", time.Since(c.roundStart).Round(time.Millisecond))
		}
	}()
	var batches [][]queuedWrite
	for len(c.pending) > 0 {
		n := min(len(c.pending), controllerWriteBatch)
		batches = append(batches, c.pending[:n])
		c.pending = c.pending[n:]
	}
	c.pending = c.pending[:0]
	if !c.active || len(batches) == 0 {
		return nil
	}
	opsOf := func(batch []queuedWrite) []any {
		ops := make([]any, len(batch))
		for i, w := range batch {
			delete(c.prefetched, w.op.Path)
			ops[i] = w.op
		}
		return ops
	}
	ops := make([][]any, len(batches))
	for i, batch := range batches {
		ops[i] = opsOf(batch)
	}
	errs := make([]error, len(batches))
	inParallel(len(batches), func(i int) error {
		errs[i] = c.send(ops[i])
		return nil
	})
	for i, batch := range batches {
		if !c.active {
			break
		}
		if errs[i] == nil {
			c.wrote(ops[i])
			for _, w := range batch {
				w.done()
			}
			written += len(batch)
			continue
		}
		if c.fenced() {
			break
		}
		if len(batch) == 1 {
			first = errors.Join(first, errs[i])
			continue
		}
		// One node changed since the round read it: the others go alone.
		for _, w := range batch {
			if err := c.write(w.op); err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			if !c.active {
				break
			}
			w.done()
			written++
		}
	}
	return first
}
