package broker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// Partitions are opened on first use and closed again when descriptors run
// short (partitions.go), so two duties of an open log need doing for the
// partitions that are not open: recovery after an unclean shutdown, which
// must happen before a partition is served and is wanted at start-up where
// an operator reads about it, and retention, which an open log applies by
// itself every RetentionCheckInterval.

// cleanShutdownMarker is the file a partition log leaves in its directory
// on a clean Close and removes on Open (documented in package log).
const cleanShutdownMarker = ".clean-shutdown"

// recoveryConcurrency bounds the partitions recovering at once at start.
const recoveryConcurrency = 8

// recoverUnclean opens every local partition this broker leads or
// follows whose directory lacks the clean-shutdown marker, so recovery
// runs (and is logged) at start; the logs are opened cold and closed again
// as descriptors are needed. A partition that cleanly shut down waits for
// its first request.
//
// Partitions recover recoveryConcurrency at a time: one after the other,
// a broker killed with 10,000 partitions took 14 s to listen again.
func (b *Broker) recoverUnclean() error {
	type part struct {
		t cluster.Topic
		p int32
	}
	work := make(chan part)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		first     error
		recovered int
	)
	for range recoveryConcurrency {
		wg.Go(func() {
			for w := range work {
				_, err := b.logs.open(w.t, w.p, false)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				} else if err == nil {
					recovered++
				}
				mu.Unlock()
			}
		})
	}
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil
	}
feed:
	for _, t := range b.meta.Topics() {
		for p, leader := range t.Leaders {
			// Followed partitions too: a broker back from a crash leads
			// none of its replicated partitions (the controller moved
			// them), and its fetchers opened them one after the other in
			// their first round, fsyncing each: at 3,000 partitions the
			// ISR was full 7 s after the restart instead of 2.
			if leader != b.selfID && !slices.Contains(t.ReplicasOf(int32(p)), b.selfID) {
				continue
			}
			dir := b.logs.partitionDir(t.Name, int32(p))
			if _, err := os.Stat(dir); err != nil {
				continue // never written: nothing to recover
			}
			if _, err := os.Stat(filepath.Join(dir, cleanShutdownMarker)); err == nil {
				continue
			}
			if failed() {
				break feed
			}
			work <- part{t, int32(p)}
		}
	}
	close(work)
	wg.Wait()
	if recovered > 0 {
		b.logger.Info("partitions recovered after an unclean shutdown", "partitions", recovered)
	}
	return first
}

// sweepRetention applies retention every interval to the local partitions
// that are not open (open logs apply it themselves). A partition with a
// single segment is skipped without opening it: retention never deletes the
// active segment.
func (b *Broker) sweepRetention(interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-b.stopSync:
			return
		case <-tick.C:
		}
		b.sweepOnce()
	}
}

// sweepOnce is one pass of sweepRetention; it returns the number of
// partitions it opened.
func (b *Broker) sweepOnce() (opened int) {
	for _, t := range b.meta.Topics() {
		for p, leader := range t.Leaders {
			select {
			case <-b.stopSync:
				return opened
			default:
			}
			key := partKey{t.Name, int32(p)}
			if leader != b.selfID || b.logs.isOpen(key) {
				continue
			}
			if segmentFiles(b.logs.partitionDir(t.Name, int32(p))) < 2 {
				continue
			}
			l, err := b.logs.open(t, int32(p), false)
			if err != nil {
				b.logger.Error("retention sweep: opening partition", "topic", t.Name, "partition", p, "err", err)
				continue
			}
			opened++
			if _, err := l.ApplyRetention(); err != nil && !errors.Is(err, log.ErrClosed) {
				b.logger.Error("retention sweep", "topic", t.Name, "partition", p, "err", err)
			}
			b.logs.closeIfUnused(key)
		}
	}
	return opened
}
