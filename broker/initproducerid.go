package broker

// InitProducerId.
//
// Hands idempotent producers a producer id; the per-partition sequence
// checks live in the storage engine (broker/log), which sees every batch in
// order. Ids must never be reused, even across restarts: a recycled id would
// meet the sequence state of its previous owner. So ids come from a counter
// taken in blocks whose upper bound is written to the data directory before
// any id of the block is handed out, passed through a keyed permutation so
// that nobody can guess another producer's id (producerid_key.go); a
// broker's id sits in the upper bits so that brokers of a cluster never hand
// out the same id. As Kafka does for a producer without a transactional id,
// a request naming an existing id and epoch (v3+, after an error) gets a new
// id: bumping the epoch of a named id would let anyone fence a stranger.
// Each id remembers the principal it was handed to, and a batch with it
// from another principal is refused (checkProducerIDs).
//
// With a transactional id the request goes to the transaction coordinator
// (broker/txn, txncoordinator.go), which needs Write on the id: the id's
// producer id is kept, its epoch bumped (fencing the previous instance)
// and what that instance left open aborted. Such ids are not tied to a
// principal: the TransactionalId ACL and the coordinator's checks guard
// them. v5 and later (KIP-939's two-phase commit) are not served.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/atomicfile"
	"github.com/tributary-io/tributary/internal/recordbatch"
)

func init() {
	register(22, 0, 4, func(b *Broker, _ *conn, req *request) *pending {
		r := req.Request.(*kmsg.InitProducerIDRequest)
		if r.TransactionalID != nil {
			return later(func() response { return encode(req, b.initTransactionalProducerID(req, r)) })
		}
		// An idempotent producer needs IdempotentWrite on the cluster or
		// Write on some topic, as in Kafka 3.x.
		if r.TransactionalID == nil && !b.mayCluster(req, kmsg.ACLOperationIdempotentWrite) &&
			!b.authz.MayWriteSomeTopic(req.principal, req.host) {
			resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
			resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = clusterRefused, -1, -1
			return ready(encode(req, resp))
		}
		return ready(encode(req, b.initProducerID(req.principal, r)))
	})
}

const (
	producerIDBlock = 1000
	// producerIDBrokerShift leaves 2^40 ids to each broker id.
	producerIDBrokerShift = 40
)

func (b *Broker) initProducerID(principal string, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	id, err := b.pids.next(principal)
	if err != nil {
		b.logger.Error("allocating a producer id", "err", err)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}

// producerIDs allocates never-reused producer ids.
type producerIDs struct {
	path   string
	prefix int64
	key    *producerIDKey
	mu     sync.Mutex
	nextID int64 // next counter value to use, plus prefix
	limit  int64 // first counter value (plus prefix) of the next unreserved block
	// owners is read on every idempotent produce, written per new id.
	ownersMu sync.RWMutex
	owners   idOwners
}

func openProducerIDs(dir string, brokerID int32) (*producerIDs, error) {
	p := &producerIDs{path: filepath.Join(dir, "producer-id-block"), prefix: int64(brokerID) << producerIDBrokerShift}
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
	if p.key, err = loadProducerIDKey(dir, p.limit-p.prefix); err != nil {
		return nil, err
	}
	return p, nil
}

// next hands out a new id to principal ("": to nobody in particular,
// as for a transactional id's producer, which its ACL guards).
func (p *producerIDs) next(principal string) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.nextID >= p.limit {
			limit := p.nextID + producerIDBlock
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

// ownerOf is the principal an id was handed to, if this broker handed it
// out since it started and still remembers it.
func (p *producerIDs) ownerOf(id int64) (string, bool) {
	p.ownersMu.RLock()
	defer p.ownersMu.RUnlock()
	return p.owners.get(id)
}

// idOwners remembers the principal of the last maxIDOwners ids handed out
// (a client asking for ids in a loop pushes out only the oldest).
type idOwners struct {
	by   map[int64]string
	ring []int64
	at   int
}

const maxIDOwners = 1 << 16

func (o *idOwners) add(id int64, principal string) {
	if o.by == nil {
		o.by = make(map[int64]string)
	}
	if len(o.ring) < maxIDOwners {
		o.ring = append(o.ring, id)
	} else {
		delete(o.by, o.ring[o.at])
		o.ring[o.at] = id
		o.at = (o.at + 1) % maxIDOwners
	}
	o.by[id] = principal
}

func (o *idOwners) get(id int64) (string, bool) {
	p, ok := o.by[id]
	return p, ok
}

// producerIDRefusal checks the producer ids of a partition's batches: one
// handed to another principal is refused with INVALID_PRODUCER_ID_MAPPING,
// so a client that learnt a producer's id cannot write batches in its name
// (and so have its next real batch acknowledged as a duplicate). Ids this
// broker does not know (handed out before its last start, or by another
// broker) pass: their unguessability is the guard there.
func (b *Broker) producerIDRefusal(principal string, records []byte) (int16, string) {
	for len(records) >= recordbatch.HeaderSize {
		h := recordbatch.ParseHeader(records)
		if h.Size() < recordbatch.HeaderSize || h.Size() > int64(len(records)) {
			return 0, "" // appendBatches refuses the framing
		}
		if id := h.ProducerID; id >= 0 {
			if owner, ok := b.pids.ownerOf(id); ok && owner != principal {
				return kerr.InvalidProducerIDMapping.Code, fmt.Sprintf("producer id %d was handed to another principal than %s", id, principal)
			}
		}
		records = records[h.Size():]
	}
	return 0, ""
}

// initTransactionalProducerID serves InitProducerId with a transactional
// id: Write on the id, then the coordinator of the id (this broker, or
// NOT_COORDINATOR).
func (b *Broker) initTransactionalProducerID(req *request, r *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	id := *r.TransactionalID
	if !b.mayTxn(req, kmsg.ACLOperationWrite, id) {
		resp.ErrorCode = txnRefused
		return resp
	}
	if resp.ErrorCode = b.txnCoordinatorRefusal(id); resp.ErrorCode != 0 {
		return resp
	}
	ctx, cancel := b.txnCtx()
	defer cancel()
	pid, epoch, err := b.txns.InitProducerID(ctx, id, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch)
	resp.ErrorCode = txnCode(err, r.Version, 4)
	if err == nil {
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
	}
	return resp
}
