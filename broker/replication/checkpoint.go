package replication

// The high-watermark checkpoint: every replicated partition's high
// watermark as this broker last knew it (led: its own; followed: the
// leader's last answer), written to replication-offset-checkpoint in the
// data directory every hwCheckpointEvery and at shutdown, and read at
// start. A leader starting in a new incarnation holds its high watermark
// where it was until each follower has fetched (leader.go); without the
// checkpoint that is 0, so after a restart consumers would see nothing of
// what they saw before until every in-sync follower fetched again. The
// checkpoint is only ever below what the ISR holds, and the leader caps it
// at its own flushed end, so a stale one hides records for a moment at
// worst, never shows unreplicated ones.
//
//	0                       format version
//	N                       number of entries
//	topic partition offset  N lines

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

const (
	hwCheckpointFile  = "replication-offset-checkpoint"
	hwCheckpointEvery = 5 * time.Second
)

// loadHighWatermarks reads the checkpoint into rs.learned at start. A
// damaged file is logged and ignored: the high watermarks then start at 0,
// as before the checkpoint existed.
func (rs *Manager) loadHighWatermarks() {
	path := filepath.Join(rs.env.dataDir, hwCheckpointFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var hws map[partKey]int64
	if err == nil {
		hws, err = decodeHWCheckpoint(data)
	}
	if err != nil {
		rs.env.logger.Warn("ignoring the high-watermark checkpoint: consumers of replicated partitions wait for followers to fetch",
			"file", path, "err", err)
		return
	}
	rs.mu.Lock()
	maps.Copy(rs.learned, hws)
	rs.mu.Unlock()
}

// checkpointHighWatermarks writes the checkpoint if it changed since the
// last write.
func (rs *Manager) checkpointHighWatermarks() {
	hws := rs.highWatermarks()
	rs.mu.Lock()
	same := maps.Equal(hws, rs.checkpointed)
	rs.mu.Unlock()
	if same {
		return
	}
	path := filepath.Join(rs.env.dataDir, hwCheckpointFile)
	if err := atomicfile.Write(path, encodeHWCheckpoint(hws)); err != nil {
		rs.env.logger.Warn("writing the high-watermark checkpoint failed", "file", path, "err", err)
		return
	}
	rs.mu.Lock()
	rs.checkpointed = hws
	rs.mu.Unlock()
}

// highWatermarks is what the checkpoint holds: the high watermarks heard
// from leaders, and those of the partitions led, for topics still there.
func (rs *Manager) highWatermarks() map[partKey]int64 {
	rs.mu.Lock()
	hws := maps.Clone(rs.learned)
	led := slices.Collect(maps.Values(rs.leading))
	rs.mu.Unlock()
	for _, ls := range led {
		ls.mu.Lock()
		hws[ls.key] = ls.hw
		ls.mu.Unlock()
	}
	for k := range hws {
		if t, ok := rs.env.meta.Topic(k.topic); !ok || !t.Replicated() || k.p >= t.Partitions() {
			delete(hws, k)
		}
	}
	return hws
}

func encodeHWCheckpoint(hws map[partKey]int64) []byte {
	keys := slices.SortedFunc(maps.Keys(hws), func(a, b partKey) int {
		if a.topic != b.topic {
			return strings.Compare(a.topic, b.topic)
		}
		return int(a.p - b.p)
	})
	b := fmt.Appendf(nil, "0\n%d\n", len(keys))
	for _, k := range keys {
		b = fmt.Appendf(b, "%s %d %d\n", k.topic, k.p, hws[k])
	}
	return b
}

func decodeHWCheckpoint(data []byte) (map[partKey]int64, error) {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, errors.New("not a version 0 high-watermark checkpoint")
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("entry count %q does not match the %d entry lines", lines[1], len(lines)-2)
	}
	hws := make(map[partKey]int64, n)
	for i, line := range lines[2:] {
		f := strings.Fields(line)
		var p, off int64
		if len(f) == 3 {
			p, err = strconv.ParseInt(f[1], 10, 32)
			if err == nil {
				off, err = strconv.ParseInt(f[2], 10, 64)
			}
		}
		if len(f) != 3 || err != nil || p < 0 || off < 0 {
			return nil, fmt.Errorf("line %d: %q is not \"topic partition offset\"", i+3, line)
		}
		hws[partKey{f[0], int32(p)}] = off
	}
	return hws, nil
}
