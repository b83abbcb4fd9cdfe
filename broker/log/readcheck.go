package log

// The read check. Recovery scans only what was written since the last
// checkpoint, and only after a crash; the scrubber is off by default. So
// a bit that rots in an old segment would reach every reader, who fails on
// its CRC for ever and sees nothing after it. Instead every read (consumers,
// followers, the loader: all go through Read, ReadUpTo or ReadToEnd)
// CRC-checks each stretch of a segment the first time this process serves
// it, and damage found is quarantined as the scrubber does: that batch is
// lost (or, on a replicated partition, fetched again from the leader, see
// Config.BeforeLoss), everything after it is served.
//
// What this process appended, and what recovery scanned, counts as checked
// already, so in steady state (consumers near the end of the log) a read
// checks nothing; an old segment costs one CRC pass over what is read of
// it, once per process.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// maxCheckedRanges bounds the stretches a segment remembers as checked;
// past it the set is forgotten and stretches are checked again: readers
// jumping all over one segment cost CRC passes, never memory.
const maxCheckedRanges = 1024

// errRepairedRead: a read found damage and had it quarantined; it is
// served again from the repaired segment.
var errRepairedRead = errors.New("damage quarantined: read again")

// checkedRanges is the set of byte stretches [from, to) of a segment known
// to hold valid batches: sorted, disjoint and not touching. Every bound is
// a batch boundary.
type checkedRanges struct {
	mu sync.Mutex
	r  [][2]int64
}

// add marks [from, to) as checked.
func (c *checkedRanges) add(from, to int64) {
	if from >= to {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.r)
	if n > 0 && c.r[n-1][1] == from { // an append after checked bytes: the usual case
		c.r[n-1][1] = to
		return
	}
	// The first range touching [from, to), and the first one after it.
	i := sort.Search(n, func(i int) bool { return c.r[i][1] >= from })
	j := i
	for j < n && c.r[j][0] <= to {
		from, to = min(from, c.r[j][0]), max(to, c.r[j][1])
		j++
	}
	if i == j && n >= maxCheckedRanges {
		c.r = c.r[:0]
		i, j = 0, 0
	}
	c.r = append(c.r[:i], append([][2]int64{{from, to}}, c.r[j:]...)...)
}

// missing returns the stretches of [from, to) not checked yet; nil when
// all of it is (no allocation then).
func (c *checkedRanges) missing(from, to int64) [][2]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.r), func(i int) bool { return c.r[i][1] > from })
	if i < len(c.r) && c.r[i][0] <= from && c.r[i][1] >= to {
		return nil
	}
	var out [][2]int64
	for pos := from; pos < to; i++ {
		if i == len(c.r) || c.r[i][0] >= to {
			out = append(out, [2]int64{pos, to})
			break
		}
		if c.r[i][0] > pos {
			out = append(out, [2]int64{pos, c.r[i][0]})
		}
		pos = max(pos, c.r[i][1])
	}
	return out
}

// clip forgets what is checked at and past size (a segment cut shorter).
func (c *checkedRanges) clip(size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := sort.Search(len(c.r), func(i int) bool { return c.r[i][1] > size })
	if n < len(c.r) && c.r[n][0] < size {
		c.r[n][1] = size
		n++
	}
	c.r = c.r[:n]
}

// checkRead CRC-checks the stretches of s's bytes [pos, end) not checked
// yet, gaps being s's recorded gaps (taken under the log's lock). On damage
// it has the segment repaired and returns errRepairedRead, or the error
// that kept the repair from being made.
func (l *Log) checkRead(s *segment, gaps map[int64]int64, pos, end int64) error {
	todo := s.checked.missing(pos, end)
	for _, m := range todo {
		if p := checkStretch(s, gaps, m[0], m[1]); p != nil {
			return l.repairFound(s, p)
		}
		s.checked.add(m[0], m[1])
	}
	return nil
}

// checkStretch verifies the batches in s's bytes [from, to): framing,
// CRC32C and base offsets following each other (across gaps).
func checkStretch(s *segment, gaps map[int64]int64, from, to int64) *scanProblem {
	r := readerPool.Get().(*reader)
	defer func() { r.f = nil; readerPool.Put(r) }()
	r.f, r.size, r.bufLen = s.f, to, 0
	g := &segment{base: s.base, gaps: gaps}
	next := int64(-1)
	for pos := from; pos < to; {
		want := next
		if want < 0 { // the first batch of a stretch: its own offset, within the segment
			if from == 0 {
				want = g.gapEnd(s.base)
			} else if b, err := r.peek(pos, recordbatch.HeaderSize); err == nil {
				if want = recordbatch.ParseHeader(b).BaseOffset; want < s.base {
					return &scanProblem{pos: pos, reason: fmt.Sprintf("base offset %d below the segment's %d", want, s.base)}
				}
			}
		}
		h, p := checkBatchAt(r, pos, want, true)
		if p != nil {
			return p
		}
		pos += h.Size()
		next = g.gapEnd(h.NextOffset())
	}
	return nil
}

// repairFound quarantines the damage a read found in s (p says what and
// where) as the scrubber does, first sealing s if it is the active
// segment, and returns errRepairedRead so that the read is served again.
func (l *Log) repairFound(s *segment, p *scanProblem) error {
	l.logger.Warn("a read found a damaged batch: quarantining it", "dir", l.dir, "file", s.path, "problem", p.String())
	below, size, gaps, err := l.sealForRepair(s)
	if err != nil {
		return err
	}
	if below < 0 {
		return errRepairedRead // replaced meanwhile (retention, cleaning, another repair)
	}
	r := newReader(s.f, size, scanWindow)
	scratch := &segment{base: s.base, path: s.path, gaps: gaps, maxTs: -1}
	_, damaged, _ := scratch.scan(r, math.MaxInt64, below, nil)
	if len(damaged) == 0 {
		// The bytes read fine now: the read failed, not the disk.
		s.checked.add(0, size)
		return fmt.Errorf("segment %s: %w: %s, but a scan of the whole segment found nothing wrong", s.path, ErrCorruptBatch, p)
	}
	if _, err := l.quarantine(s, damaged); err != nil {
		return fmt.Errorf("segment %s: %w: %s, and quarantining it failed: %w", s.path, ErrCorruptBatch, p, err)
	}
	return errRepairedRead
}

// sealForRepair makes s a sealed, flushed segment, rolling the log first
// when s is its active segment, and returns the base offset of the
// segment after it (-1 when s is no longer in the log), its size and its
// gaps.
func (l *Log) sealForRepair(s *segment) (below, size int64, gaps map[int64]int64, err error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if err := l.flushLocked(); err != nil {
		return 0, 0, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, 0, nil, ErrClosed
	}
	if s == l.active {
		ns, err := createSegment(l.fs, l.dir, l.leo)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("roll segment at offset %d to repair %s: %w", l.leo, s.path, err)
		}
		ns.firstTime = l.cfg.Clock()
		l.segs = append(l.segs, ns)
		l.active, l.hwSeg, l.hwPos = ns, ns, 0
		l.dirDirty = true
		l.snapshotProducers()
	}
	for i, c := range l.segs {
		if c == s {
			if err := s.seal(); err != nil { // flushed above, and no flush runs: nothing to sync
				return 0, 0, nil, err
			}
			return l.segs[i+1].base, s.size, s.gaps, nil
		}
	}
	return -1, 0, nil, nil
}

// quarantine moves the damaged stretches of the sealed segment s out of the
// log (repairSegment), after Config.BeforeLoss, swaps the repaired segment
// in and reports what was lost. Nothing is done when s was replaced or cut
// since it was scanned: the damage positions would not fit it.
func (l *Log) quarantine(s *segment, damaged []damage) ([]LostRange, error) {
	// Retention, cleaning and truncation must not delete or replace the
	// segment while its replacement is being renamed into place.
	l.repairMu.Lock()
	defer l.repairMu.Unlock()
	l.mu.RLock()
	present, size := false, s.size
	for _, c := range l.segs {
		present = present || c == s
	}
	l.mu.RUnlock()
	if !present || damaged[len(damaged)-1].to > size {
		return nil, nil
	}
	if err := l.beforeLoss(damaged); err != nil {
		return nil, err
	}
	ns, lost, err := repairSegment(l.fs, s, damaged, size, l.cfg.IndexIntervalBytes)
	if err != nil {
		return nil, fmt.Errorf("repair %s: %w", s.path, err)
	}
	if err := writeIndexFile(l.fs, ns.indexPath, ns.index); err != nil {
		l.logger.Warn("writing index of repaired segment: it is rebuilt at the next start", "file", ns.indexPath, "err", err)
	}
	ns.indexStale = false
	ns.checked.add(0, ns.size) // scanned whole before the repair
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

// damagedRead reports whether a read error may come from damaged bytes
// (a length or header that does not walk) rather than from the file.
func damagedRead(err error) bool {
	return errors.Is(err, ErrCorruptBatch) || errors.Is(err, io.ErrUnexpectedEOF)
}

// checkRange is the read check of a read that found the bytes [pos, end)
// of s (whose first limit bytes it may read), or failed with err: a
// failure that may come from damaged bytes in a stretch not checked yet
// has the segment scanned and repaired too.
func (l *Log) checkRange(s *segment, gaps map[int64]int64, pos, end, limit int64, err error) error {
	if err == nil {
		return l.checkRead(s, gaps, pos, end)
	}
	if damagedRead(err) && s.checked.missing(0, limit) != nil {
		return l.repairFound(s, &scanProblem{pos: pos, reason: err.Error()})
	}
	return err
}
