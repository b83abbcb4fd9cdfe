package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// An offset index is a file of fixed-size entries, one every
// IndexIntervalBytes of batches (and always one for the first batch):
//
//	relative offset uint32 | file position uint32 | max timestamp so far int64
//
// all big-endian. The relative offset is a batch's base offset minus the
// segment's base offset; the position is where that batch starts; the
// timestamp is the largest batch MaxTimestamp from the start of the segment
// up to and including that batch. The index is only an accelerator: Open
// checks it against its segment and rebuilds it from the batch headers when
// it is missing or does not fit.
const indexEntrySize = 16

type indexEntry struct {
	rel   uint32
	pos   uint32
	maxTs int64
}

func (e indexEntry) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, e.rel)
	b = binary.BigEndian.AppendUint32(b, e.pos)
	return binary.BigEndian.AppendUint64(b, uint64(e.maxTs))
}

func encodeIndex(entries []indexEntry) []byte {
	b := make([]byte, 0, len(entries)*indexEntrySize)
	for _, e := range entries {
		b = e.appendTo(b)
	}
	return b
}

// decodeIndex parses an index file and checks it is consistent on its own
// and with a segment of segSize bytes: entries strictly increasing in offset
// and position, the first at the segment's start, every position inside the
// segment, timestamps never decreasing.
func decodeIndex(b []byte, segSize int64) ([]indexEntry, error) {
	if len(b)%indexEntrySize != 0 {
		return nil, fmt.Errorf("index size %d is not a multiple of %d", len(b), indexEntrySize)
	}
	entries := make([]indexEntry, 0, len(b)/indexEntrySize)
	for i := 0; i < len(b); i += indexEntrySize {
		e := indexEntry{
			rel:   binary.BigEndian.Uint32(b[i:]),
			pos:   binary.BigEndian.Uint32(b[i+4:]),
			maxTs: int64(binary.BigEndian.Uint64(b[i+8:])),
		}
		if int64(e.pos)+recordbatch.HeaderSize > segSize {
			return nil, fmt.Errorf("index entry %d points at byte %d, past the %d-byte segment", len(entries), e.pos, segSize)
		}
		if n := len(entries); n == 0 {
			// The first batch may start after the segment's base offset
			// when a repair took the batches before it (a gap).
			if e.pos != 0 {
				return nil, errors.New("first index entry is not the segment's first batch")
			}
		} else if p := entries[n-1]; e.rel <= p.rel || e.pos <= p.pos || e.maxTs < p.maxTs {
			return nil, fmt.Errorf("index entry %d is out of order", n)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// lookup returns the last entry at or before rel (the batch containing rel
// starts at or after it). entries must be non-empty.
func lookup(entries []indexEntry, rel uint32) indexEntry {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].rel > rel })
	if i == 0 {
		return entries[0]
	}
	return entries[i-1]
}

// lookupPos returns the last entry whose position is at or before pos.
func lookupPos(entries []indexEntry, pos int64) (indexEntry, bool) {
	i := sort.Search(len(entries), func(i int) bool { return int64(entries[i].pos) > pos })
	if i == 0 {
		return indexEntry{}, false
	}
	return entries[i-1], true
}

// lookupTime returns the last entry whose cumulative max timestamp is below
// ts: no batch before it can have a MaxTimestamp >= ts, so a search for ts
// may start there.
func lookupTime(entries []indexEntry, ts int64) indexEntry {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].maxTs >= ts })
	if i == 0 {
		return entries[0]
	}
	return entries[i-1]
}

// writeIndexFile replaces path with the given entries. The index can always
// be rebuilt, so a crash half way through costs a rebuild, not data.
func writeIndexFile(fsys FS, path string, entries []indexEntry) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(encodeIndex(entries))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// relOffsetFits reports whether offsets up to last can be stored relative to
// base in an index entry.
func relOffsetFits(base, last int64) bool { return last-base <= math.MaxUint32 }
