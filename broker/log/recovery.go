package log

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Open opens the partition log in dir, creating the directory if needed.
//
// After a clean shutdown (the marker Close writes is present) Open trusts
// the segments: it loads each index, checks it against its segment and walks
// the batch headers after the last index entry to find the segment's end.
// After an unclean one it scans every batch (length, magic, CRC32C, record
// count, base-offset continuity) of the segments from the one holding the
// recovery checkpoint to the end, truncates the log at the first torn or
// corrupt batch, drops the segments after it, rebuilds the indexes of what
// it scanned and reports (and logs) what it cut. Either way a missing or
// inconsistent index is rebuilt, and the state of idempotent producers is
// loaded from its newest snapshot and the batch headers after it.
//
// All data on disk after Open is flushed: HighWatermark == LogEndOffset.
func Open(dir string, cfg Config, logger *slog.Logger) (*Log, RecoveryReport, error) {
	cfg = cfg.WithDefaults()
	if logger == nil {
		logger = slog.Default()
	}
	if _, err := cfg.FS.Stat(dir); err != nil {
		// A new partition: its directory entry must be durable before
		// anything in it is acknowledged.
		if err := cfg.FS.MkdirAll(dir, 0o755); err != nil {
			return nil, RecoveryReport{}, err
		}
		if err := cfg.FS.SyncDir(filepath.Dir(dir)); err != nil {
			return nil, RecoveryReport{}, err
		}
	}
	l := &Log{
		dir:       dir,
		fs:        cfg.FS,
		cfg:       cfg,
		logger:    logger,
		changed:   make(chan struct{}),
		producers: producers{},
		flushReq:  make(chan struct{}, 1),
		dirtyCh:   make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	l.keyed.Store(cfg.CleanupPolicy.compacts())
	rep, err := l.load()
	if err != nil {
		for _, s := range l.segs {
			s.close()
		}
		return nil, rep, fmt.Errorf("open log %s: %w", dir, err)
	}
	l.lastCheckpoint = time.Now()
	l.wg.Add(1)
	go l.run()
	if cfg.ScrubInterval > 0 {
		l.wg.Add(1)
		go l.scrubLoop()
	}
	return l, rep, nil
}

// listSegments returns the base offsets of the segment files in dir, sorted,
// and removes leftovers that have no meaning without a segment: indexes
// whose segment is gone and temporary files of interrupted atomic writes.
func listSegments(fsys FS, dir string) ([]int64, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	logs := map[int64]bool{}
	var indexes, gaps []int64
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".tmp"):
			fsys.Remove(filepath.Join(dir, name))
		case strings.HasSuffix(name, ".log"), strings.HasSuffix(name, ".index"), strings.HasSuffix(name, ".gaps"):
			ext := filepath.Ext(name)
			base, err := strconv.ParseInt(strings.TrimSuffix(name, ext), 10, 64)
			if err != nil || base < 0 || len(name) != 20+len(ext) {
				continue
			}
			switch ext {
			case ".log":
				bases = append(bases, base)
				logs[base] = true
			case ".index":
				indexes = append(indexes, base)
			default:
				gaps = append(gaps, base)
			}
		}
	}
	for _, base := range indexes {
		if !logs[base] {
			_, p := segmentPaths(dir, base)
			fsys.Remove(p)
		}
	}
	for _, base := range gaps {
		if !logs[base] {
			fsys.Remove(gapsPath(dir, base))
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// load rebuilds the in-memory state of the log from its directory.
func (l *Log) load() (RecoveryReport, error) {
	rep := RecoveryReport{TruncatedAt: -1}
	if done, err := finishSwap(l.fs, l.dir); err != nil { // a cleaning interrupted by a crash (swap.go)
		return rep, err
	} else if len(done) > 0 {
		l.logger.Info("finished swapping in cleaned segments after a crash", "dir", l.dir, "segments", len(done))
	}
	l.cleaned = readCleanerCheckpoint(l.fs, l.dir)
	bases, err := listSegments(l.fs, l.dir)
	if err != nil {
		return rep, err
	}
	marker := filepath.Join(l.dir, cleanMarkerFile)
	_, err = l.fs.Stat(marker)
	hasMarker := err == nil
	// A new partition has nothing to recover.
	rep.Clean = hasMarker || len(bases) == 0
	if hasMarker {
		// From now on a crash is an unclean shutdown again.
		if err := l.fs.Remove(marker); err != nil {
			return rep, err
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return rep, err
		}
	}
	scanFrom := len(bases)
	cp := int64(-1)
	if !rep.Clean {
		cp, err = readCheckpoint(l.fs, l.dir)
		if err != nil {
			l.logger.Warn("ignoring unreadable recovery checkpoint: scanning the whole log", "dir", l.dir, "err", err)
		}
		scanFrom = sort.Search(len(bases), func(i int) bool { return bases[i] > cp }) - 1
		scanFrom = max(scanFrom, 0)
	}

	var scanned []*segment
	for i, base := range bases {
		s, err := openSegment(l.fs, l.dir, base)
		if err != nil {
			return rep, err
		}
		l.segs = append(l.segs, s)
		if i < scanFrom {
			rebuilt, p := l.loadTrusted(s)
			if rebuilt {
				rep.IndexesRebuilt++
			}
			if p == nil {
				continue
			}
			l.logger.Warn("segment inconsistent where it should be whole: scanning from it",
				"file", s.path, "problem", p.String())
			scanFrom, rep.Clean = i, false
		}
		if i > 0 && base != l.segs[i-1].gapEnd(l.segs[i-1].next) {
			p := &scanProblem{reason: fmt.Sprintf("segment starts at offset %d but the previous one ends at %d", base, l.segs[i-1].next)}
			l.segs = l.segs[:i]
			l.truncate(&rep, l.segs[i-1], s, p, 0, bases[i:])
			break
		}
		rep.SegmentsScanned++
		rep.IndexesRebuilt++
		s.index, s.maxTs, s.indexStale = nil, -1, true
		below := int64(math.MaxInt64)
		if i+1 < len(bases) {
			below = bases[i+1]
		}
		end, damaged, tail := s.scan(newReader(s.f, s.size, scanWindow), l.cfg.IndexIntervalBytes, below, nil)
		cut := s.size - end
		if len(damaged) > 0 {
			if err := l.beforeLoss(damaged); err != nil {
				return rep, err
			}
			ns, lost, err := repairSegment(l.fs, s, damaged, end, l.cfg.IndexIntervalBytes)
			if err != nil {
				return rep, err
			}
			s.close()
			s, l.segs[i] = ns, ns
			l.reportLost(&rep, lost)
		}
		scanned = append(scanned, s)
		if tail != nil {
			if len(damaged) == 0 {
				s.size = end // a repair already left the tail out
			}
			l.truncate(&rep, s, s, tail, cut, bases[i+1:])
			break
		}
	}

	if len(l.segs) == 0 {
		s, err := createSegment(l.fs, l.dir, 0)
		if err != nil {
			return rep, err
		}
		l.segs = append(l.segs, s)
		// The new file's directory entry must be durable before anything
		// in it is acknowledged: the first flush syncs the directory.
		l.dirDirty = true
	}
	for _, s := range scanned {
		s.checked.add(0, s.size) // every batch CRC-checked by the scan
	}
	for _, s := range l.segs {
		l.size += s.size
		if s.indexStale && s != l.segs[len(l.segs)-1] {
			if err := writeIndexFile(l.fs, s.indexPath, s.index); err != nil {
				return rep, err
			}
			s.indexStale = false
		}
	}
	l.active = l.segs[len(l.segs)-1]
	if l.active.w == nil {
		if err := l.active.openWriters(); err != nil {
			return rep, err
		}
	}
	if err := l.loadProducerState(); err != nil {
		return rep, err
	}
	l.start, l.leo = l.segs[0].base, l.active.next
	l.start = l.restoredStartOffset() // DeleteRecordsBefore (startoffset.go)
	l.hw, l.hwSeg, l.hwPos, l.flushTarget = l.leo, l.active, l.active.size, l.leo
	l.loadEpochs()

	if !rep.Clean && !l.durableToCheckpoint(cp, scanned, rep) {
		// A process crash leaves unflushed bytes in the page cache: make what
		// recovery kept durable before anyone reads it, then checkpoint.
		for _, s := range scanned {
			if err := syncFile(l.fs, s.path); err != nil {
				return rep, err
			}
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return rep, err
		}
		if err := l.writeCheckpoint(); err != nil {
			return rep, err
		}
		// Info only when something was cut: a broker killed with
		// thousands of partitions recovers them all, and logs their
		// number once (the broker's recoverUnclean).
		level := slog.LevelDebug
		if rep.TruncatedBytes > 0 || len(rep.Lost) > 0 {
			level = slog.LevelInfo
		}
		l.logger.Log(context.Background(), level, "recovered partition log after unclean shutdown", "dir", l.dir,
			"segments_scanned", rep.SegmentsScanned, "indexes_rebuilt", rep.IndexesRebuilt,
			"log_end_offset", l.leo, "truncated_bytes", rep.TruncatedBytes, "lost_ranges", len(rep.Lost))
	}
	return rep, nil
}

// loadTrusted loads the index of a segment that needs no CRC scan and walks
// the batch headers after its last entry to find where the segment ends. An
// index that does not fit its segment is rebuilt from the headers; a problem
// in the headers themselves is returned for the caller to scan and cut.
func (l *Log) loadTrusted(s *segment) (rebuilt bool, p *scanProblem) {
	b, err := l.fs.ReadFile(s.indexPath)
	if err == nil {
		s.index, err = decodeIndex(b, s.size)
	}
	for attempt := 0; ; attempt++ {
		from, next := int64(0), s.base
		if err != nil || attempt > 0 {
			s.index, s.maxTs, rebuilt = nil, -1, true
		} else if n := len(s.index); n > 0 {
			last := s.index[n-1]
			from, next, s.maxTs = int64(last.pos), s.base+int64(last.rel), last.maxTs
		}
		known := len(s.index)
		_, p = s.walk(newReader(s.f, s.size, scanWindow), from, next, l.cfg.IndexIntervalBytes, false, nil)
		if p != nil && known > 0 && attempt == 0 {
			continue // the index may be what is wrong: walk again from the start
		}
		if rebuilt || len(s.index) != known {
			s.indexStale = true
		}
		if rebuilt {
			why := "missing"
			if err == nil {
				why = "does not match its segment"
			} else if !errors.Is(err, os.ErrNotExist) {
				why = err.Error()
			}
			l.logger.Warn("rebuilt offset index", "file", s.indexPath, "why", why)
		}
		return rebuilt, p
	}
}

// truncate cuts the log at the problem p found in segment bad: last (bad,
// or the segment before it when bad is dropped whole) keeps last.size bytes,
// cut bytes are removed from its end, and the segments named by dropBases
// are deleted.
func (l *Log) truncate(rep *RecoveryReport, last, bad *segment, p *scanProblem, cut int64, dropBases []int64) {
	if bad == last {
		if terr := l.fs.Truncate(last.path, last.size); terr != nil {
			l.logger.Error("truncating segment", "file", last.path, "err", terr)
		}
	}
	var dropped []string
	for _, base := range dropBases {
		logPath, indexPath := segmentPaths(l.dir, base)
		if fi, err := l.fs.Stat(logPath); err == nil {
			cut += fi.Size()
		}
		l.fs.Remove(logPath)
		l.fs.Remove(indexPath)
		l.fs.Remove(gapsPath(l.dir, base))
		dropped = append(dropped, filepath.Base(logPath))
	}
	if bad != last {
		bad.close()
	}
	rep.Clean = false
	rep.TruncatedBytes = cut
	rep.TruncatedAt = last.next
	rep.Reason = fmt.Sprintf("%s: %s", filepath.Base(bad.path), p)
	l.logger.Warn("recovery truncated partition log",
		"dir", l.dir, "file", filepath.Base(bad.path), "byte", p.pos, "torn", p.torn, "reason", p.reason,
		"truncated_bytes", cut, "new_log_end_offset", last.next, "dropped_segments", dropped)
}

// reportLost logs each range of offsets a repair took out of the log, one
// error line each (data is gone; an operator must hear of it), and adds them
// to the report.
func (l *Log) reportLost(rep *RecoveryReport, lost []LostRange) {
	msg := "damaged batches quarantined: offsets lost"
	if l.cfg.BeforeLoss != nil {
		msg = "damaged batches quarantined: offsets lost on this replica until fetched again from another"
	}
	for _, r := range lost {
		l.logger.Error(msg,
			"dir", l.dir, "file", r.Segment, "bytes", [2]int64{r.FromByte, r.ToByte},
			"offsets", [2]int64{r.FirstOffset, r.NextOffset - 1}, "quarantine", r.Quarantine, "reason", r.Reason)
	}
	rep.Clean = false
	rep.Lost = append(rep.Lost, lost...)
	if l.cfg.OnLost != nil {
		for _, r := range lost {
			l.cfg.OnLost(r)
		}
	}
}
