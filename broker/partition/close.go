package partition

import (
	"errors"
	"fmt"
	"sync"

	"github.com/tributary-io/tributary/broker/log"
)

// Closing a partition log costs several fsyncs: its last flush, the
// recovery checkpoint, the producer snapshot and the clean-shutdown marker.
// When one request names more partitions than the descriptor budget holds
// open (a produce to all 10,000 partitions of a broker with descriptors for
// 3,000 open logs), each partition it opens pushes out one it opened a
// moment before. Closed one after the other on the request's own goroutine,
// those closes made the request take minutes, past every client's timeout,
// so a client retrying it was never answered although every record was
// written. The logs taken out to make room are therefore closed in the
// background, closeConcurrency at a time, and an opener goes on at once:
// the descriptors they still hold may pass the budget by closeSlackFDs
// (the budget is half the process's limit, see openfiles.go), and only
// past that does an opener wait for closes to finish.

// closeConcurrency bounds the logs closing at once across the broker. Their
// fsyncs also pass through the storage engine's fsync slots.
const closeConcurrency = 32

// closeSlots is the semaphore of closeConcurrency.
var closeSlots = make(chan struct{}, closeConcurrency)

// closeSlackFDs is how far past the budget the descriptors of logs still
// closing may go before openers wait: a quarter of the budget (which is
// half the limit), at least enough for the closes in flight.
func (ps *Table) closeSlackFDs() int {
	return max(ps.fdBudget/4, 3*closeConcurrency)
}

// retireLocked takes o out of the open set for closing: openers of the
// same partition wait for closing[key] before opening it again. The
// caller closes it (closeLogs, closeInBackground) after releasing mu.
func (ps *Table) retireLocked(o *openLog) {
	ps.removeLocked(o)
	delete(ps.logs, o.key)
	ps.closing[o.key] = make(chan struct{})
	if !o.parked { // a parked log's descriptors are counted by its release
		o.retiredFDs = o.fds
		ps.closingFDs += o.fds
	}
}

// waitForClosingRoom returns once the descriptors of logs still closing
// are within the slack.
func (ps *Table) waitForClosingRoom() {
	if ps.fdBudget <= 0 {
		return
	}
	for {
		ps.mu.Lock()
		if ps.closingFDs <= ps.closeSlackFDs() {
			ps.mu.Unlock()
			return
		}
		ch := ps.roomFreed
		ps.mu.Unlock()
		<-ch
	}
}

// closeInBackground closes logs retired by makeRoomLocked without waiting.
func (ps *Table) closeInBackground(victims []*openLog) {
	for _, o := range victims {
		go ps.closeLogs([]*openLog{o})
	}
}

// closeLogs closes retired logs, closeConcurrency at a time across the
// broker, and lets waiting openers of the same partitions go on.
func (ps *Table) closeLogs(victims []*openLog) {
	var wg sync.WaitGroup
	for _, o := range victims {
		closeSlots <- struct{}{}
		wg.Go(func() {
			defer func() { <-closeSlots }()
			if err := o.l.Close(); err != nil && !errors.Is(err, log.ErrClosed) {
				ps.logger.Error("closing idle partition", "topic", o.key.Topic, "partition", o.key.Partition, "err", err)
			}
			ps.mu.Lock()
			close(ps.closing[o.key])
			delete(ps.closing, o.key)
			ps.closingFDs -= o.retiredFDs
			close(ps.roomFreed)
			ps.roomFreed = make(chan struct{})
			ps.mu.Unlock()
		})
	}
	wg.Wait()
}

// CloseAll flushes and closes every log, writing their clean-shutdown
// marks, closeConcurrency at a time: one after the other, a broker with
// thousands of open partitions took minutes to stop.
func (ps *Table) CloseAll() error {
	ps.cleaner.Close()
	taken := ps.take(func(Key) bool { return true })
	errs := make([]error, len(taken))
	var wg sync.WaitGroup
	for i, o := range taken {
		closeSlots <- struct{}{}
		wg.Go(func() {
			defer func() { <-closeSlots }()
			if err := o.l.Close(); err != nil && !errors.Is(err, log.ErrClosed) {
				errs[i] = fmt.Errorf("closing %s-%d: %w", o.key.Topic, o.key.Partition, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
