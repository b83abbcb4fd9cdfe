package partition

import (
	"sync"

	"github.com/tributary-io/tributary/cluster"
)

// Opening many logs for one caller. Opening a log creates a new partition's
// directory (an fsync of the data directory) or recovers one after a crash
// (reads, and fsyncs of what it scanned), so a caller about to use
// thousands of logs that are not open, one after the other, waits for
// thousands of those in turn: a follower's first fetch round of a new
// 3,000-partition topic, or the first acks=all produce naming its
// partitions on their leader, took seconds. OpenTogether opens them
// openConcurrency at a time first, as start-up recovery does
// (recoveryConcurrency); the caller then takes them one by one with Get,
// which finds them open.

// openConcurrency bounds the logs one OpenTogether opens at once.
const openConcurrency = 8

// Want names a partition to open: its topic as the caller looked it up.
type Want struct {
	Topic     cluster.Topic
	Partition int32
}

// OpenTogether opens the logs of want that are not open yet,
// openConcurrency at a time, as Get would (a client uses them), and
// returns once each is open or has failed. A failure is left for the
// caller's Get, which opens again and reports it.
func (ps *Table) OpenTogether(want []Want) {
	var closed []Want
	ps.mu.RLock()
	for _, w := range want {
		if ps.logs[Key{w.Topic.Name, w.Partition}] == nil {
			closed = append(closed, w)
		}
	}
	ps.mu.RUnlock()
	if len(closed) < 2 {
		return // one is opened by the caller's Get as well as here
	}
	work := make(chan Want)
	var wg sync.WaitGroup
	for range min(openConcurrency, len(closed)) {
		wg.Go(func() {
			for w := range work {
				ps.open(w.Topic, w.Partition, true)
			}
		})
	}
	for _, w := range closed {
		work <- w
	}
	close(work)
	wg.Wait()
}
