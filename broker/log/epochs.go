package log

// The leader-epoch cache: for each leader epoch of a replicated partition,
// the first offset written in it. Replicas use it to find where their logs
// diverge after a leader change (OffsetForLeaderEpoch): a replica's records
// of an epoch past the leader's end offset for that epoch were never
// replicated and must go before it follows the new leader, or two replicas
// would hold different records at one offset.
//
// The leader records an epoch when it starts leading (AssignLeaderEpoch)
// and writes the epoch into every batch it appends (the batch header's
// partition leader epoch, outside the CRC); a follower learns the epochs
// from the batches it copies. The cache is persisted as
// leader-epoch-checkpoint, replaced atomically on every change (a change is
// a leader election, rare), and truncated with the log at both ends: when
// the log start offset moves up (DeleteRecordsBefore, retention), the
// epochs wholly below it go and the one covering it starts at the log
// start, so the cache never describes records the log no longer has and an
// epoch older than every remaining one ends at the log start.
//
//	0                 format version
//	N                 number of entries
//	epoch start       N lines, epochs and start offsets increasing

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

const leaderEpochFile = "leader-epoch-checkpoint"

// epochEntry is the first offset of one leader epoch.
type epochEntry struct {
	epoch int32
	start int64
}

// AssignLeaderEpoch is called when this broker starts leading the partition
// in epoch: the epoch starts at the log end offset, and the batches
// appended from now on carry it. An epoch not above the latest recorded
// one only sets what batches carry (the leader restarted within its epoch).
func (l *Log) AssignLeaderEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.stampEpoch = epoch
	return l.recordEpoch(epoch, l.leo)
}

// recordEpoch adds epoch starting at start if it is newer than the latest
// recorded, and persists the cache. Call with mu held.
func (l *Log) recordEpoch(epoch int32, start int64) error {
	if n := len(l.epochs); n > 0 && epoch <= l.epochs[n-1].epoch {
		return nil
	}
	l.epochs = append(l.epochs, epochEntry{epoch, start})
	return l.writeEpochs()
}

// LatestEpoch is the newest leader epoch the log holds records of or was
// assigned, or -1 when none is known (a log written before epochs were
// recorded, or never replicated).
func (l *Log) LatestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if n := len(l.epochs); n > 0 {
		return l.epochs[n-1].epoch
	}
	return -1
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch at or
// below the requested one that this log knows, and the offset where it
// ends (the start of the next known epoch, or the log end offset for the
// latest). A requested epoch below every known one ends where the first
// known epoch starts: once the log start moved past it, the log start
// (Kafka answers so, the requested epoch with the earliest entry's start,
// rather than UNDEFINED_EPOCH_OFFSET). (-1, -1) when the log knows no epoch at or above the
// requested one (the requester should fall back on the high watermark).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := len(l.epochs)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if l.epochs[n-1].epoch == epoch {
		return epoch, l.leo
	}
	i := 0 // first entry above epoch
	for i < n && l.epochs[i].epoch <= epoch {
		i++
	}
	switch {
	case i == n:
		return -1, -1
	case i == 0:
		return epoch, l.epochs[0].start
	}
	return l.epochs[i-1].epoch, l.epochs[i].start
}

// learnEpoch records the epoch a follower's copied batch carries. Call
// with mu held.
func (l *Log) learnEpoch(batch []byte, base int64) error {
	epoch := int32(binary.BigEndian.Uint32(batch[recordbatch.OffLeaderEpoch:]))
	if epoch < 0 {
		return nil
	}
	return l.recordEpoch(epoch, base)
}

// truncateEpochs forgets the epochs that start at or after offset, whose
// records a truncation removed. Call with mu held.
func (l *Log) truncateEpochs(offset int64) error {
	n := len(l.epochs)
	for n > 0 && l.epochs[n-1].start >= offset {
		n--
	}
	if n == len(l.epochs) {
		return nil
	}
	l.epochs = l.epochs[:n]
	return l.writeEpochs()
}

// trimEpochsToStart forgets the epochs wholly below the log start offset
// and moves the start of the one covering it up to the log start, as
// Kafka does when segments go from the front: a follower asking for an
// epoch older than every remaining one is then told it ends at the log
// start, the first offset this log can still serve. Call with mu held,
// after l.start moved.
func (l *Log) trimEpochsToStart() error {
	i := 0 // entries starting at or below the log start
	for i < len(l.epochs) && l.epochs[i].start <= l.start {
		i++
	}
	if i == 0 || (i == 1 && l.epochs[0].start == l.start) {
		return nil
	}
	covering := epochEntry{l.epochs[i-1].epoch, l.start}
	l.epochs = append([]epochEntry{covering}, l.epochs[i:]...)
	return l.writeEpochs()
}

func (l *Log) writeEpochs() error {
	if err := writeFileAtomic(l.fs, l.dir, leaderEpochFile, encodeEpochs(l.epochs)); err != nil {
		return fmt.Errorf("write %s: %w", leaderEpochFile, err)
	}
	return nil
}

// loadEpochs reads the cache at Open, drops epochs starting past the
// recovered log end (their records were lost in a crash) and trims those
// below the log start (a crash between moving the start and rewriting the
// checkpoint). An unreadable
// file is logged and the cache starts empty: the follower then falls back
// on its high watermark.
func (l *Log) loadEpochs() {
	l.stampEpoch = -1
	b, err := l.fs.ReadFile(filepath.Join(l.dir, leaderEpochFile))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil {
		l.epochs, err = decodeEpochs(b)
	}
	if err != nil {
		l.epochs = nil
		l.logger.Warn("ignoring unreadable leader-epoch checkpoint", "dir", l.dir, "err", err)
		return
	}
	n := len(l.epochs)
	for n > 0 && l.epochs[n-1].start > l.leo {
		n--
	}
	if n < len(l.epochs) {
		l.epochs = l.epochs[:n]
		if err := l.writeEpochs(); err != nil {
			l.logger.Warn("rewriting the leader-epoch checkpoint", "dir", l.dir, "err", err)
		}
	}
	if err := l.trimEpochsToStart(); err != nil {
		l.logger.Warn("rewriting the leader-epoch checkpoint", "dir", l.dir, "err", err)
	}
}

// encodeEpochs is the leader-epoch checkpoint's format: a version line
// (0), an entry count, then one "epoch start" line per epoch.
func encodeEpochs(epochs []epochEntry) []byte {
	b := fmt.Appendf(nil, "0\n%d\n", len(epochs))
	for _, e := range epochs {
		b = fmt.Appendf(b, "%d %d\n", e.epoch, e.start)
	}
	return b
}

func decodeEpochs(b []byte) ([]epochEntry, error) {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, errors.New("not a version 0 leader-epoch checkpoint")
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("entry count %q does not match the %d entry lines", lines[1], len(lines)-2)
	}
	out := make([]epochEntry, 0, n)
	for i, line := range lines[2:] {
		f := strings.Fields(line)
		var e epochEntry
		var ep int64
		if len(f) == 2 {
			ep, err = strconv.ParseInt(f[0], 10, 32)
			if err == nil {
				e.start, err = strconv.ParseInt(f[1], 10, 64)
			}
		}
		e.epoch = int32(ep)
		if len(f) != 2 || err != nil || e.epoch < 0 || e.start < 0 ||
			(i > 0 && (e.epoch <= out[i-1].epoch || e.start < out[i-1].start)) {
			return nil, fmt.Errorf("line %d: %q is not an increasing \"epoch start\" entry", i+3, line)
		}
		out = append(out, e)
	}
	return out, nil
}
