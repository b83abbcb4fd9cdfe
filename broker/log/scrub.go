package log

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// DefaultScrubRate bounds the scrubber's reads: at 16 MiB/s a 1 GiB segment
// takes about a minute, a small share of a disk's bandwidth.
const DefaultScrubRate = 16 << 20

// errScrubStopped ends a scrub when the log closes.
var errScrubStopped = errors.New("scrub stopped: log closing")

// scrubLoop re-verifies the sealed segments every ScrubInterval. Recovery
// checks only what was written since the last checkpoint, and only after a
// crash; bits that rot later in sealed segments would otherwise stay until a
// consumer trips over them.
func (l *Log) scrubLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.ScrubInterval)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
			if _, err := l.Scrub(); err != nil && !errors.Is(err, errScrubStopped) && !errors.Is(err, ErrClosed) {
				l.logger.Error("scrubbing partition log", "dir", l.dir, "err", err)
			}
		}
	}
}

// Scrub CRC-checks every sealed, fully flushed segment at no more than
// ScrubRate bytes a second and repairs each damaged one as recovery does
// (quarantine the damaged bytes, rewrite the segment without them, record
// the gap), so that consumers read past the damage instead of failing on it
// for ever. It returns the offset ranges lost; each is also logged as an
// error. The active segment is left to recovery: it is still being written.
func (l *Log) Scrub() ([]LostRange, error) {
	type candidate struct {
		s     *segment
		below int64
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, ErrClosed
	}
	var cands []candidate
	for i, s := range l.segs {
		if s == l.active || s == l.hwSeg || s.next > l.hw || s.w != nil {
			break
		}
		s.ref()
		cands = append(cands, candidate{s, l.segs[i+1].base})
	}
	l.mu.RUnlock()

	var lost []LostRange
	var err error
	for i, c := range cands {
		if err == nil {
			var l2 []LostRange
			l2, err = l.scrubSegment(c.s, c.below)
			lost = append(lost, l2...)
		}
		cands[i].s.unref()
	}
	return lost, err
}

func (l *Log) scrubSegment(s *segment, below int64) ([]LostRange, error) {
	scratch := &segment{base: s.base, path: s.path, gaps: s.gaps, maxTs: -1}
	r := newReader(&throttledReader{f: s.f, rate: l.cfg.ScrubRate, done: l.done}, s.size, scanWindow)
	_, damaged, _ := scratch.scan(r, math.MaxInt64, below, nil)
	select {
	case <-l.done:
		return nil, errScrubStopped // a read failed because we stopped: the scan proves nothing
	default:
	}
	if len(damaged) == 0 {
		return nil, nil
	}
	// Retention must not delete the segment while its replacement is being
	// renamed into place.
	l.repairMu.Lock()
	defer l.repairMu.Unlock()
	l.mu.RLock()
	present := false
	for _, c := range l.segs {
		present = present || c == s
	}
	l.mu.RUnlock()
	if !present {
		return nil, nil // deleted by retention meanwhile
	}
	if err := l.beforeLoss(damaged); err != nil {
		return nil, err
	}
	ns, lost, err := repairSegment(l.fs, s, damaged, s.size, l.cfg.IndexIntervalBytes)
	if err != nil {
		return nil, fmt.Errorf("repair %s: %w", s.path, err)
	}
	if err := writeIndexFile(l.fs, ns.indexPath, ns.index); err != nil {
		l.logger.Warn("writing index of repaired segment: it is rebuilt at the next start", "file", ns.indexPath, "err", err)
	}
	ns.indexStale = false
	l.mu.Lock()
	for i, c := range l.segs {
		if c == s {
			l.segs[i] = ns
		}
	}
	l.size += ns.size - s.size
	l.mu.Unlock()
	s.close()
	var rep RecoveryReport
	l.reportLost(&rep, lost)
	return lost, nil
}

// throttledReader paces reads to rate bytes a second, and fails them once
// done is closed so that Close does not wait for a whole segment.
type throttledReader struct {
	f    io.ReaderAt
	rate int64
	done <-chan struct{}
}

func (t *throttledReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := t.f.ReadAt(p, off)
	pause := time.NewTimer(time.Duration(float64(n) / float64(t.rate) * float64(time.Second)))
	defer pause.Stop()
	select {
	case <-t.done:
		return 0, errScrubStopped
	case <-pause.C:
	}
	return n, err
}
