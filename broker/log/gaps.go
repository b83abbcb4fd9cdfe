package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A gap is a range of offsets that a segment once held and lost when a
// damaged stretch of it was quarantined (see repair.go). Offsets are never
// reassigned, so the batches after a gap keep theirs and the segment's base
// offsets jump over it; Kafka consumers skip such holes as they do those left
// by compaction.
//
// Gaps are recorded in NNN.gaps beside the segment, one "from to" line per
// gap (to exclusive), so that the continuity check of every later scan stays
// strict: a base offset may jump only where a gap says it does, and a bit
// flipped in a base offset (which no CRC covers) is still caught.

func gapsPath(dir string, base int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d.gaps", base))
}

// readGaps loads a segment's gaps; a missing file means none.
func readGaps(fsys FS, path string) (map[int64]int64, error) {
	b, err := fsys.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	gaps := map[int64]int64{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		var from, to int64
		if len(f) == 2 {
			from, err = strconv.ParseInt(f[0], 10, 64)
			if err == nil {
				to, err = strconv.ParseInt(f[1], 10, 64)
			}
		}
		if len(f) != 2 || err != nil || from < 0 || to <= from {
			return nil, fmt.Errorf("%s line %d: %q is not a gap \"from to\"", path, i+1, line)
		}
		gaps[from] = to
	}
	return gaps, nil
}

// encodeGaps is the content of a gaps file, sorted for people reading it.
func encodeGaps(gaps map[int64]int64) []byte {
	froms := make([]int64, 0, len(gaps))
	for from := range gaps {
		froms = append(froms, from)
	}
	sort.Slice(froms, func(i, j int) bool { return froms[i] < froms[j] })
	var b []byte
	for _, from := range froms {
		b = fmt.Appendf(b, "%d %d\n", from, gaps[from])
	}
	return b
}

// gapEnd returns the offset the next batch must start at when the previous
// one ended at next: next itself, or the end of the gaps starting there.
func (s *segment) gapEnd(next int64) int64 {
	for range len(s.gaps) {
		to, ok := s.gaps[next]
		if !ok {
			break
		}
		next = to
	}
	return next
}

// segmentServing returns the segment holding offset, or, when offset falls
// in a gap at the end of a segment (its tail was quarantined), the next
// segment and its base offset. Inside a segment Read's forward scan already
// lands on the first batch after a gap. Call with mu held.
func (l *Log) segmentServing(offset int64) (*segment, int64) {
	i := max(sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })-1, 0)
	for offset >= l.segs[i].next && i+1 < len(l.segs) {
		i++
		offset = max(offset, l.segs[i].base)
	}
	return l.segs[i], offset
}
