package log

// Repair from replicas. A replica of a replicated partition that finds a
// damaged batch in its own log need not lose it: another replica holds it
// intact. Before recovery, the scrubber or a read make such a loss durable
// (quarantine), they call Config.BeforeLoss; the broker's hook records
// the first lost offset in the partition directory's repair-from file
// (RecordRepairFrom). When the replica next follows its leader it cuts its
// log back to that offset (CutBackForRepair) and fetches everything from
// there again; until then its fetch offset is below the high watermark.
// The marker goes once the log is cut back: from then on the log end
// itself says what is missing.
//
// The marker is one decimal offset and a newline, replaced atomically. It
// is read as hostile input: anything else is refused with an error naming
// the file, and no new loss is recorded over it (the offset it should have
// held might be lower than the new one, and a repair from too high an
// offset would keep the gap for ever).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// RepairMarkerFile is the marker's name in a partition directory.
const RepairMarkerFile = "repair-from"

// maxRepairMarkerBytes bounds what is read of a marker: an offset is at
// most 19 digits.
const maxRepairMarkerBytes = 32

// ErrBadRepairMarker: the repair-from file does not hold an offset.
var ErrBadRepairMarker = errors.New("damaged repair-from marker")

// ReadRepairFrom returns the offset the marker in dir names, ok false when
// there is none.
func ReadRepairFrom(fsys FS, dir string) (offset int64, ok bool, err error) {
	path := filepath.Join(dir, RepairMarkerFile)
	b, err := fsys.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading %s: %w", path, err)
	}
	off, perr := parseRepairMarker(b)
	if perr != nil {
		return 0, false, fmt.Errorf("%w: %s %v; it should hold the first offset this replica must fetch again from its leader: "+
			"write that offset into it followed by a newline (0 fetches the whole log again), or delete the "+
			"partition's directory so that it is copied afresh", ErrBadRepairMarker, path, perr)
	}
	return off, true, nil
}

// parseRepairMarker accepts exactly what RecordRepairFrom writes.
func parseRepairMarker(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, errors.New("is empty")
	}
	if len(b) > maxRepairMarkerBytes {
		return 0, fmt.Errorf("holds %d bytes, more than an offset", len(b))
	}
	if b[len(b)-1] != '\n' {
		return 0, errors.New("does not end in a newline (cut short?)")
	}
	digits := b[:len(b)-1]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("holds %q, not a decimal offset", b)
		}
	}
	off, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("holds %q, not an offset: %v", b, err)
	}
	return off, nil
}

// RecordRepairFrom makes durable that the log in dir must be cut back to
// firstLost and fetched again from there. A marker already there with a
// lower offset is kept (both losses are repaired by the lower cut); a
// damaged one is an error and left as it is.
func RecordRepairFrom(fsys FS, dir string, firstLost int64) error {
	if firstLost < 0 {
		return fmt.Errorf("repair from offset %d: negative", firstLost)
	}
	cur, ok, err := ReadRepairFrom(fsys, dir)
	if err != nil {
		return err
	}
	if ok && cur <= firstLost {
		return nil
	}
	if err := writeFileAtomic(fsys, dir, RepairMarkerFile, []byte(strconv.FormatInt(firstLost, 10)+"\n")); err != nil {
		return fmt.Errorf("recording that %s must be fetched again from offset %d: %w", dir, firstLost, err)
	}
	return nil
}

// RepairFrom returns the offset the log's repair-from marker names, ok
// false when it has none.
func (l *Log) RepairFrom() (offset int64, ok bool, err error) {
	return ReadRepairFrom(l.fs, l.dir)
}

// CutBackForRepair cuts the log back to the offset its repair-from marker
// names, durably, and then removes the marker; a log without one is left
// as it is. It returns the offset cut back to (ok false: no marker). A
// crash at any point leaves the marker (and a log cut or not) or a cut log
// without it: the next call finishes the work.
func (l *Log) CutBackForRepair() (offset int64, ok bool, err error) {
	off, ok, err := l.RepairFrom()
	if err != nil || !ok {
		return 0, false, err
	}
	was := l.LogEndOffset()
	if _, err := l.TruncateTo(off); err != nil {
		return 0, false, fmt.Errorf("cutting %s back to offset %d to fetch it again: %w", l.dir, off, err)
	}
	if err := l.fs.Remove(filepath.Join(l.dir, RepairMarkerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, false, err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return 0, false, err
	}
	l.logger.Warn("cut the log back to its first damaged batch: fetching everything from there again from the leader",
		"dir", l.dir, "from_offset", off, "old_log_end_offset", was)
	return off, true, nil
}

// beforeLoss calls Config.BeforeLoss, if set, for the first offset of
// damaged, before anything of it is made durable.
func (l *Log) beforeLoss(damaged []damage) error {
	if l.cfg.BeforeLoss == nil || len(damaged) == 0 {
		return nil
	}
	first := damaged[0].firstLost
	for _, d := range damaged[1:] {
		first = min(first, d.firstLost)
	}
	if err := l.cfg.BeforeLoss(first); err != nil {
		return fmt.Errorf("before quarantining damage at offset %d of %s: %w", first, l.dir, err)
	}
	return nil
}
