package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Swapping cleaned segments in. A cleaning replaces a set of segments; a
// crash at any point must leave either every old segment or every new one,
// never a mix. The steps, each durable before the next:
//
//  1. The replacements are written to NNN.log.cleaned and NNN.gaps.cleaned
//     and fsynced, and the directory is fsynced (rewriteSegment, here).
//  2. The marker cleaning-swap, listing the base offsets of the set, is
//     written atomically: this is the commit point.
//  3. For each base: the old NNN.index is removed (it describes the old
//     file), NNN.gaps.cleaned is renamed over NNN.gaps and NNN.log.cleaned
//     over NNN.log; then the directory is fsynced, the new indexes are
//     written and the marker is removed.
//
// At Open (finishSwap), a marker means the set was committed: step 3 is
// finished for every base (a rename already done is skipped, a missing
// index is rebuilt). No marker means it was not: the .cleaned files are
// deleted and the old segments stay. Readers holding Slices of an old
// segment keep reading its file, which the rename unlinked.

const (
	cleanedSuffix         = ".cleaned"
	swapMarkerFile        = "cleaning-swap"
	cleanerCheckpointFile = "cleaner-checkpoint"
)

// swapCleaned commits the cleaned replacements in out and puts them in
// place of their segments in the open log. It holds mu throughout, so that
// no reader, append, retention or DeleteRecords sees a half-done swap; a
// segment that DeleteRecords removed since the cleaning began is left out.
// committed says whether the marker was written: from then on the
// .cleaned files belong to the swap, even when it fails half-way.
func (l *Log) swapCleaned(out []cleanedSegment) (committed bool, err error) {
	if len(out) == 0 {
		return false, nil
	}
	l.repairMu.Lock() // the scrubber and retention replace or delete segments under it
	defer l.repairMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, ErrClosed
	}
	present := map[*segment]int{}
	for i, s := range l.segs {
		present[s] = i
	}
	var set []cleanedSegment
	for _, c := range out {
		if _, ok := present[c.old]; ok {
			set = append(set, c)
		} else {
			c.discard(l.fs)
		}
	}
	if len(set) == 0 {
		return false, nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return false, fmt.Errorf("sync %s before swapping cleaned segments: %w", l.dir, err)
	}
	var marker []byte
	for _, c := range set {
		marker = strconv.AppendInt(marker, c.old.base, 10)
		marker = append(marker, '\n')
	}
	if err := writeFileAtomic(l.fs, l.dir, swapMarkerFile, marker); err != nil {
		return false, fmt.Errorf("commit cleaned segments: %w", err)
	}
	// Committed: from here a failure leaves the swap to the next Open, and
	// the log must take no more appends, since its files no longer match
	// what it holds in memory.
	if err := completeSwap(l.fs, l.dir, bases(set)); err != nil {
		l.failed = fmt.Errorf("log %s failed swapping in cleaned segments (the next start finishes it): %w", l.dir, err)
		l.logger.Error("partition log stopped taking appends", "dir", l.dir, "err", l.failed)
		l.wake()
		return true, l.failed
	}
	for _, c := range set {
		ns, err := openSegment(l.fs, l.dir, c.old.base)
		if err != nil {
			l.failed = fmt.Errorf("log %s failed opening a cleaned segment (the next start recovers it): %w", l.dir, err)
			l.wake()
			return true, l.failed
		}
		ns.index, ns.next, ns.maxTs = c.index, c.next, c.maxTs
		ns.aborted = c.old.aborted // markers are kept whole, so is NNN.txnindex
		if err := writeIndexFile(l.fs, ns.indexPath, ns.index); err != nil {
			l.logger.Warn("writing index of cleaned segment: it is rebuilt at the next start", "file", ns.indexPath, "err", err)
		}
		l.segs[present[c.old]] = ns
		l.size += ns.size - c.old.size
		c.old.close() // Slices already handed out keep the old file open
	}
	if err := l.fs.Remove(filepath.Join(l.dir, swapMarkerFile)); err != nil {
		l.logger.Warn("removing cleaning marker: the next start finishes the swap again, harmlessly", "dir", l.dir, "err", err)
	}
	return true, nil
}

func bases(set []cleanedSegment) []int64 {
	out := make([]int64, len(set))
	for i, c := range set {
		out[i] = c.old.base
	}
	return out
}

// completeSwap is step 3 for the segments at bases; every step may already
// have been done by an earlier attempt.
func completeSwap(fsys FS, dir string, bases []int64) error {
	for _, base := range bases {
		logPath, indexPath := segmentPaths(dir, base)
		if err := fsys.Remove(indexPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, p := range []string{gapsPath(dir, base), logPath} {
			if _, err := fsys.Stat(p + cleanedSuffix); err != nil {
				continue // renamed already
			}
			if err := fsys.Rename(p+cleanedSuffix, p); err != nil {
				return err
			}
		}
	}
	return fsys.SyncDir(dir)
}

// finishSwap, at Open, completes a committed swap or rolls back one that
// was not committed (see the top of this file).
func finishSwap(fsys FS, dir string) (completed []int64, err error) {
	marker := filepath.Join(dir, swapMarkerFile)
	b, err := fsys.ReadFile(marker)
	changed := err == nil // the marker goes
	switch {
	case err == nil:
		for _, line := range strings.Fields(string(b)) {
			base, perr := strconv.ParseInt(line, 10, 64)
			if perr != nil || base < 0 {
				return nil, fmt.Errorf("%s: %q is not a segment base offset", marker, line)
			}
			completed = append(completed, base)
		}
		if err := completeSwap(fsys, dir, completed); err != nil {
			return nil, fmt.Errorf("finishing the swap of cleaned segments: %w", err)
		}
		if err := fsys.Remove(marker); err != nil {
			return nil, err
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), cleanedSuffix) {
			if err := fsys.Remove(filepath.Join(dir, e.Name())); err != nil {
				return nil, err
			}
			changed = true
		}
	}
	if !changed {
		return nil, nil // nothing changed: no directory fsync on every Open
	}
	return completed, fsys.SyncDir(dir)
}

// readCleanerCheckpoint is where the dirty section starts: 0 when the log
// was never cleaned (or the file is unreadable: cleaning again is safe).
func readCleanerCheckpoint(fsys FS, dir string) int64 {
	b, err := fsys.ReadFile(filepath.Join(dir, cleanerCheckpointFile))
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}
