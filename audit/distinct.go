package audit

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
)

// DefaultMaxDistinct bounds the event identities a scan holds to tell
// duplicates apart: 10 million, about 400 MB. A scan that meets more
// events than this still counts them, but states no distinct counts
// (duplicates are then reported as excess).
const DefaultMaxDistinct = 10_000_000

// distinctCounter counts distinct events per Key by a 16-byte identity
// of each event (a hash of what makes it that event), holding at most max
// identities.
type distinctCounter struct {
	max  int
	seen map[[16]byte]struct{}
	n    map[Key]int64
	over bool
	log  *slog.Logger
}

func newDistinctCounter(max int, log *slog.Logger) *distinctCounter {
	if max == 0 {
		max = DefaultMaxDistinct
	}
	return &distinctCounter{max: max, seen: map[[16]byte]struct{}{}, n: map[Key]int64{}, log: log}
}

// add counts the event identified by id under k, once.
func (d *distinctCounter) add(k Key, id [16]byte) {
	if d.over || d.max < 0 {
		return
	}
	if _, dup := d.seen[id]; dup {
		return
	}
	if len(d.seen) >= d.max {
		d.over, d.seen, d.n = true, nil, nil
		d.log.Warn("audit: too many events to tell duplicates apart; the counts are stated without distinct counts", "max_distinct", d.max)
		return
	}
	d.seen[id] = struct{}{}
	d.n[k]++
}

// fill sets c.Distinct, unless the bound was met.
func (d *distinctCounter) fill(c *Counts) {
	if d.over || d.max < 0 {
		return
	}
	c.Distinct = d.n
}

// bytesID identifies an event by its encoded body: a copy of an event
// (a replayed range, a retried produce, the mirror's duplicates) has the
// same bytes; two events do not (each header has its own guid and time).
func bytesID(body []byte) [16]byte {
	s := sha256.Sum256(body)
	return [16]byte(s[:16])
}

// headerID identifies a decoded event by its header (time, server,
// service, guid): what the producer stamped on that one event.
func headerID(header any) [16]byte {
	s := sha256.Sum256(fmt.Appendf(nil, "%v", header))
	return [16]byte(s[:16])
}
