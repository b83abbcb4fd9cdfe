package log

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"time"
)

// DefaultScrubRate bounds the scrubbers' reads (per broker, through a shared
// ScrubPace): at 16 MiB/s a 1 GiB segment takes about a minute, a small
// share of a disk's bandwidth, and the CRC work a few per cent of a core
// (BenchmarkScrub).
const DefaultScrubRate = 16 << 20

// errScrubStopped ends a scrub when the log closes.
var errScrubStopped = errors.New("scrub stopped: log closing")

// scrubLoop re-verifies the sealed segments every ScrubInterval. Recovery
// checks only what was written since the last checkpoint, and only after a
// crash; bits that rot later in sealed segments would otherwise stay until a
// consumer trips over them.
//
// The first pass starts at a random moment within the first interval, so
// the logs a broker opens together do not all become due together.
func (l *Log) scrubLoop() {
	defer l.wg.Done()
	t := time.NewTimer(rand.N(l.cfg.ScrubInterval))
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
			t.Reset(l.cfg.ScrubInterval)
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
	// A candidate's size and gaps are read under the lock: a truncation
	// (a follower's repair cutting back, for one) changes them while the
	// scrub reads the file.
	type candidate struct {
		s           *segment
		below, size int64
		gaps        map[int64]int64
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, ErrClosed
	}
	var cands []candidate
	for i, s := range l.segs {
		if s == l.active || s == l.hwSeg || s.next > l.hw || s.w != nil || s.parked {
			break
		}
		s.ref()
		cands = append(cands, candidate{s, l.segs[i+1].base, s.size, s.gaps})
	}
	l.mu.RUnlock()

	var lost []LostRange
	var err error
	for i, c := range cands {
		if err == nil {
			var l2 []LostRange
			l2, err = l.scrubSegment(c.s, c.below, c.size, c.gaps)
			lost = append(lost, l2...)
		}
		cands[i].s.unref()
	}
	return lost, err
}

func (l *Log) scrubSegment(s *segment, below, size int64, gaps map[int64]int64) ([]LostRange, error) {
	scratch := &segment{base: s.base, path: s.path, gaps: gaps, maxTs: -1}
	pace := l.cfg.ScrubPace
	if pace == nil {
		pace = NewScrubPace(l.cfg.ScrubRate)
	}
	r := newReader(&throttledReader{f: s.f, pace: pace, done: l.done}, size, scanWindow)
	_, damaged, _ := scratch.scan(r, math.MaxInt64, below, nil)
	select {
	case <-l.done:
		return nil, errScrubStopped // a read failed because we stopped: the scan proves nothing
	default:
	}
	if len(damaged) == 0 {
		s.checked.add(0, r.size) // reads need not check it again
		return nil, nil
	}
	return l.quarantine(s, damaged) // readcheck.go
}

// throttledReader paces reads through pace, and fails them once done is
// closed so that Close does not wait for a whole segment.
type throttledReader struct {
	f    io.ReaderAt
	pace *ScrubPace
	done <-chan struct{}
}

func (t *throttledReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := t.f.ReadAt(p, off)
	if werr := t.pace.wait(n, t.done); werr != nil {
		return 0, werr
	}
	return n, err
}
