package log

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// LostRange is a damaged stretch of a segment that recovery or the scrubber
// moved out of the log: the offsets [FirstOffset, NextOffset) are gone, the
// batches on both sides are kept with their offsets, and the damaged bytes
// are in Quarantine for an operator to inspect (or delete).
type LostRange struct {
	Segment     string // segment file name
	FromByte    int64  // position of the damaged bytes in the segment before repair
	ToByte      int64  // exclusive
	FirstOffset int64  // first offset lost
	NextOffset  int64  // first offset kept after the damage
	Quarantine  string // path of the file holding the damaged bytes
	Reason      string // what was wrong with the first damaged batch
}

func (r LostRange) String() string {
	return fmt.Sprintf("%s bytes [%d, %d): offsets [%d, %d) lost (%s), bytes kept in %s",
		r.Segment, r.FromByte, r.ToByte, r.FirstOffset, r.NextOffset, r.Reason, filepath.Base(r.Quarantine))
}

// quarantinePath names the file that keeps the damaged bytes found at pos
// of a segment: beside it, so that it goes wherever the partition goes.
func quarantinePath(segPath string, pos int64) string {
	return fmt.Sprintf("%s.quarantine-%d", segPath, pos)
}

// repairSegment rewrites s without its damaged stretches and without the
// bytes from keep on (a tail being cut), and returns the repaired segment,
// opened, with its index rebuilt (and marked stale: the caller writes it).
// The caller closes s.
//
// Every step leaves a state that the next recovery handles: the damaged
// bytes and the new gaps are made durable first (the gaps file fits the
// old segment as well, whose damage the next scan finds again), then the
// old index is removed (so that it is rebuilt rather than trusted), and the
// segment is replaced by a complete, fsynced copy with one rename: a crash
// leaves the old segment or the new one, never a mix.
func repairSegment(fsys FS, s *segment, damaged []damage, keep int64, interval int64) (*segment, []LostRange, error) {
	dir := filepath.Dir(s.path)
	gaps := maps.Clone(s.gaps)
	if gaps == nil {
		gaps = map[int64]int64{}
	}
	var lost []LostRange
	for _, d := range damaged {
		q := quarantinePath(s.path, d.from)
		for k := 1; ; k++ { // a later repair may find damage at the same byte: keep both
			if _, err := fsys.Stat(q); err != nil {
				break
			}
			q = fmt.Sprintf("%s.%d", quarantinePath(s.path, d.from), k)
		}
		if err := atomicfile.WriteFromDirUnsynced(atomicFS{fsys}, q, io.NewSectionReader(s.f, d.from, d.to-d.from)); err != nil {
			return nil, nil, fmt.Errorf("quarantine %s bytes [%d, %d): %w", s.path, d.from, d.to, err)
		}
		if d.nextKept > d.firstLost { // else bytes without offsets of their own, e.g. garbage written between batches
			gaps[d.firstLost] = d.nextKept
		}
		lost = append(lost, LostRange{Segment: filepath.Base(s.path), FromByte: d.from, ToByte: d.to,
			FirstOffset: d.firstLost, NextOffset: d.nextKept, Quarantine: q, Reason: d.problem.String()})
	}
	if err := writeFileAtomic(fsys, dir, filepath.Base(gapsPath(dir, s.base)), encodeGaps(gaps)); err != nil {
		return nil, nil, fmt.Errorf("record gaps of %s: %w", s.path, err)
	}
	if err := fsys.Remove(s.indexPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	var kept []io.Reader
	pos := int64(0)
	for _, d := range damaged {
		kept = append(kept, io.NewSectionReader(s.f, pos, d.from-pos))
		pos = d.to
	}
	if pos < keep {
		kept = append(kept, io.NewSectionReader(s.f, pos, keep-pos))
	}
	if err := atomicfile.WriteFrom(atomicFS{fsys}, s.path, io.MultiReader(kept...)); err != nil {
		return nil, nil, fmt.Errorf("rewrite %s without its damaged bytes: %w", s.path, err)
	}
	ns, err := openSegment(fsys, dir, s.base)
	if err != nil {
		return nil, nil, err
	}
	if _, p := ns.walk(newReader(ns.f, ns.size, scanWindow), 0, ns.base, interval, false, nil); p != nil {
		ns.close()
		return nil, nil, fmt.Errorf("repaired segment %s does not walk: %v", ns.path, p)
	}
	ns.indexStale = true
	ns.aborted = s.aborted // NNN.txnindex is not rewritten: its entries still say what was aborted
	return ns, lost, nil
}
