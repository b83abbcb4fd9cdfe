package log

import "hash/maphash"

// offsetMap is the cleaner's fixed-size map from a key's hash to the offset
// of the key's latest record, as Kafka's cleaner builds it: the memory is
// set once (a slice of slots filled by open addressing) and never grows, so
// a log with more distinct keys than slots is cleaned in parts.
//
// Keys are not stored, only 128 bits of hash: two keys whose hashes collide
// would be taken for one and the older one's record dropped, which at 128
// bits does not happen in practice (Kafka takes the same risk with MD5).
// The hash is seeded per map: it never leaves the process.
type offsetMap struct {
	slots  []mapSlot
	used   int
	limit  int // most slots used before the map counts as full
	seeds  [2]maphash.Seed
	probes int64 // slots looked at, for tests and statistics
}

type mapSlot struct {
	h1, h2 uint64
	off    int64 // offset + 1: zero marks an empty slot
}

// mapSlotSize is the memory one key takes: Kafka's 24 bytes (a 16-byte
// hash and an 8-byte offset).
const mapSlotSize = 24

// mapLoadFactor keeps probe chains short: past it the map is full.
const mapLoadFactor = 0.9

// newOffsetMap makes a map of about bytes of memory (at least one slot).
func newOffsetMap(bytes int64) *offsetMap {
	n := max(int(bytes/mapSlotSize), 2)
	return &offsetMap{
		slots: make([]mapSlot, n),
		limit: max(int(float64(n)*mapLoadFactor), 1),
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
	}
}

// reset empties the map for the next cleaning.
func (m *offsetMap) reset() {
	clear(m.slots)
	m.used = 0
}

// capacity is the number of keys the map holds before it is full.
func (m *offsetMap) capacity() int { return m.limit }

func (m *offsetMap) hash(key []byte) (uint64, uint64) {
	h1 := maphash.Bytes(m.seeds[0], key)
	h2 := maphash.Bytes(m.seeds[1], key)
	return h1, h2
}

// slot returns the index of the slot holding (h1, h2), or of the empty slot
// where it would go.
func (m *offsetMap) slot(h1, h2 uint64) int {
	n := uint64(len(m.slots))
	i := h1 % n
	for {
		m.probes++
		s := &m.slots[i]
		if s.off == 0 || s.h1 == h1 && s.h2 == h2 {
			return int(i)
		}
		if i++; i == n {
			i = 0
		}
	}
}

// put records offset as the key's latest; it returns false, changing
// nothing, when the key is new and the map is full.
func (m *offsetMap) put(key []byte, offset int64) bool {
	h1, h2 := m.hash(key)
	s := &m.slots[m.slot(h1, h2)]
	if s.off == 0 {
		if m.used >= m.limit {
			return false
		}
		m.used++
		s.h1, s.h2 = h1, h2
	}
	s.off = offset + 1
	return true
}

// get returns the latest offset recorded for key.
func (m *offsetMap) get(key []byte) (int64, bool) {
	h1, h2 := m.hash(key)
	s := m.slots[m.slot(h1, h2)]
	return s.off - 1, s.off != 0
}
