package cluster

// Thousands of partitions in ZooKeeper. A replicated partition is one state
// node, and the view (refresh), the controller's round and the leader's ISR
// changes all read or write them. Read one after the other, a 3,000-
// partition topic cost 3,000 round trips per refresh (seconds), and every
// ISR change refreshed the whole view: after a broker restarted, its
// partitions rejoined the ISR at about one every four seconds. So:
//   - state nodes are read zkReadsInFlight at a time: the client pipelines
//     concurrent requests on its one connection, so a refresh costs a few
//     dozen round trips instead of thousands;
//   - the view's watches keep what they read (NewCachingZKWatch), and the
//     controller shares them (ZKWatch.Subscribe): a refresh or a round
//     reads again only the nodes whose watch fired, so a change costs one
//     read per broker, not thousands;
//   - a leader's ISR changes are written many to a multi and put into
//     the view as written (SetISRs, patchStates: isrbatch.go) instead of
//     re-reading everything; the watch brings the same states, or newer
//     ones, with the next refresh.

import (
	"context"
	"path"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// Counts of the work the above avoids, for tests (export_test.go): reads
// through watches that went to ZooKeeper, and multis sent by a controller.
var (
	watchReads       atomic.Int64
	controllerMultis atomic.Int64
)

// zkReadsInFlight bounds the concurrent reads of one refresh or round.
const zkReadsInFlight = 64

// inParallel calls fn(i) for every i below n, zkReadsInFlight at a time,
// and returns the first error by index.
func inParallel(n int, fn func(i int) error) error {
	if n <= 1 {
		if n == 1 {
			return fn(0)
		}
		return nil
	}
	errs := make([]error, n)
	slots := make(chan struct{}, zkReadsInFlight)
	var wg sync.WaitGroup
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// refresh reads the registries afresh, all of them, after this process
// wrote to them (a topic created, configs changed): what the watch keeps
// may predate the write.
func (z *ZooKeeper) refresh() error {
	z.watch.ForgetAll()
	return z.refreshView()
}

// multiBytes bounds the estimated size of one multi: ZooKeeper refuses a
// request over jute.maxbuffer (1 MB by default) by closing the connection.
const multiBytes = 512 << 10

// createInMultis runs the creations of a replicated topic (the topic node
// first) in one multi when they fit in multiBytes, else in several: the
// first holds the topic node, so a topic that exists already fails there
// and nothing is written. Until the last one lands, brokers may see some
// of its partitions without a state node, which they serve as having no
// leader. A later multi failing takes the topic back out (best effort).
func (z *ZooKeeper) createInMultis(ops []any) error {
	var chunks [][]any
	size, start := 0, 0
	for i, op := range ops {
		c := op.(*zk.CreateRequest)
		n := len(c.Path) + len(c.Data) + 64
		if size+n > multiBytes && i > start {
			chunks = append(chunks, ops[start:i])
			start, size = i, 0
		}
		size += n
	}
	chunks = append(chunks, ops[start:])
	for i, chunk := range chunks {
		if _, err := z.s.Conn.Multi(chunk...); err != nil {
			if i > 0 {
				topic := path.Base(ops[0].(*zk.CreateRequest).Path)
				if derr := z.DeleteTopic(context.Background(), topic); derr != nil {
					z.log.Warn("a topic's creation failed half way and could not be taken back: delete it", "topic", topic, "err", derr)
				}
			}
			return err
		}
	}
	return nil
}
