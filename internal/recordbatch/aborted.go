package recordbatch

import (
	"cmp"
	"slices"
)

// Aborted is a transaction a read_committed fetch answer lists as aborted
// in a partition: its producer, and the offset of its first batch there.
type Aborted struct {
	ProducerID  int64
	FirstOffset int64
}

// DropAborted returns a partition's batches from a read_committed fetch
// answer (in offset order) without those of aborted transactions, as a
// read_committed reader must see them (KIP-98): from the first offset of an
// aborted transaction, its producer's transactional batches are left out
// until that producer's abort marker. Control batches stay (Walk skips
// them), and so does a batch cut short at the end. It also returns the
// offset after the last whole batch, dropped or not (-1 if none), so that
// a reader whose answer ended in dropped batches fetches past them.
// batches itself is returned when nothing is dropped.
func DropAborted(batches []byte, aborted []Aborted) (kept []byte, next int64) {
	next = -1
	if len(aborted) == 0 {
		return batches, next
	}
	pending := slices.SortedFunc(slices.Values(aborted), func(a, b Aborted) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	open := map[int64]bool{} // producers inside an aborted transaction
	var out []byte
	from, pos := 0, 0
	for len(batches)-pos >= HeaderSize {
		h := ParseHeader(batches[pos:])
		size := LengthPrefix + int(h.Length)
		if h.Length < HeaderSize-LengthPrefix || pos+size > len(batches) {
			break // cut short, or damaged: left to the walk to report
		}
		last := h.NextOffset() - 1
		for len(pending) > 0 && pending[0].FirstOffset <= last {
			open[pending[0].ProducerID] = true
			pending = pending[1:]
		}
		switch {
		case h.Control():
			if typ, err := ControlType(batches[pos : pos+size]); err == nil && typ == ControlAbort {
				delete(open, h.ProducerID)
			}
		case h.Transactional() && open[h.ProducerID]:
			if out == nil {
				out = make([]byte, 0, len(batches))
			}
			out = append(out, batches[from:pos]...)
			from = pos + size
		}
		next = max(next, last+1)
		pos += size
	}
	if out == nil {
		return batches, next
	}
	return append(out, batches[from:]...), next
}
