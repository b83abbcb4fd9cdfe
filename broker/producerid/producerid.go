// Package producerid hands out the producer ids of idempotent and
// transactional producers.
//
// It promises: an id is never handed out twice by brokers of one cluster,
// even across restarts (a recycled id would meet the sequence state of its
// previous owner), and nobody can guess the next one from those seen. Ids
// come from a counter taken in blocks whose upper bound is written to the
// data directory before any id of the block is handed out, passed through
// a keyed permutation (key.go); a broker's id sits in the upper bits, so
// brokers of a cluster never hand out the same id. Each id handed to a
// principal remembers it (OwnerOf) for the last 65,536 ids, so the broker
// can refuse a batch with that id from another principal.
package producerid

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

const (
	block = 1000
	// BrokerShift leaves 2^40 ids to each broker id: an id's bits above it
	// are the broker's that handed it out.
	BrokerShift = 40
)

// IDs allocates never-reused producer ids.
type IDs struct {
	path   string
	prefix int64
	key    *key
	mu     sync.Mutex
	nextID int64 // next counter value to use, plus prefix
	limit  int64 // first counter value (plus prefix) of the next unreserved block
	// owners is read on every idempotent produce, written per new id.
	ownersMu sync.RWMutex
	owners   owners
}

// Open reads the allocator's state in data directory dir for broker
// brokerID, making it the first time.
func Open(dir string, brokerID int32) (*IDs, error) {
	p := &IDs{path: filepath.Join(dir, "producer-id-block"), prefix: int64(brokerID) << BrokerShift}
	data, err := os.ReadFile(p.path)
	switch {
	case os.IsNotExist(err):
		p.limit = p.prefix
	case err != nil:
		return nil, fmt.Errorf("reading producer id block: %w", err)
	default:
		n, perr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if perr != nil {
			return nil, fmt.Errorf("producer id block file %s is corrupt (%v); remove it only if no producer of the previous run is alive", p.path, perr)
		}
		p.limit = max(n, p.prefix)
	}
	p.nextID = p.limit
	if p.key, err = loadKey(dir, p.limit-p.prefix); err != nil {
		return nil, err
	}
	return p, nil
}

// Next hands out a new id to principal ("": to nobody in particular,
// as for a transactional id's producer, which its ACL guards).
func (p *IDs) Next(principal string) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.nextID >= p.limit {
			limit := p.nextID + block
			if err := atomicfile.Write(p.path, []byte(strconv.FormatInt(limit, 10))); err != nil {
				return 0, err
			}
			p.limit = limit
		}
		c := p.key.permute(p.nextID - p.prefix)
		p.nextID++
		if c >= p.key.floor {
			id := p.prefix | c
			if principal != "" {
				p.ownersMu.Lock()
				p.owners.add(id, principal)
				p.ownersMu.Unlock()
			}
			return id, nil
		}
	}
}

// OwnerOf is the principal an id was handed to, if this broker handed it
// out since it started and still remembers it.
func (p *IDs) OwnerOf(id int64) (string, bool) {
	p.ownersMu.RLock()
	defer p.ownersMu.RUnlock()
	return p.owners.get(id)
}

// owners remembers the principal of the last maxOwners ids handed out
// (a client asking for ids in a loop pushes out only the oldest).
type owners struct {
	by   map[int64]string
	ring []int64
	at   int
}

const maxOwners = 1 << 16

func (o *owners) add(id int64, principal string) {
	if o.by == nil {
		o.by = make(map[int64]string)
	}
	if len(o.ring) < maxOwners {
		o.ring = append(o.ring, id)
	} else {
		delete(o.by, o.ring[o.at])
		o.ring[o.at] = id
		o.at = (o.at + 1) % maxOwners
	}
	o.by[id] = principal
}

func (o *owners) get(id int64) (string, bool) {
	p, ok := o.by[id]
	return p, ok
}
