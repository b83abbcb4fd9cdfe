package broker

// InitProducerId.
//
// Hands idempotent producers a producer id; the per-partition sequence
// checks live in the storage engine (broker/log), which sees every batch in
// order. Ids must never be reused, even across restarts: a recycled id would
// meet the sequence state of its previous owner. So ids are taken from
// blocks whose upper bound is written to the data directory before any id of
// the block is handed out, and a broker's id sits in the upper bits so that
// brokers of a cluster never hand out the same id. A producer that asks with
// its current id and epoch (v3+, after an error) gets the next epoch.
// Transactions are not supported: a transactional id is refused.

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
)

func init() {
	register(22, 0, 4, now((*Broker).initProducerID))
}

const (
	producerIDBlock = 1000
	// producerIDBrokerShift leaves 2^40 ids to each broker id.
	producerIDBrokerShift = 40
)

func (b *Broker) initProducerID(req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		// Kafka's code for a broker that will not serve transactions.
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		b.refuse("transactions", "a transactional producer asked for a producer id", "transactional_id", *req.TransactionalID)
		return resp
	}
	if req.Version >= 3 && req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < 1<<15-1 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return resp
	}
	id, err := b.pids.next()
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
	mu     sync.Mutex
	nextID int64 // next id to hand out
	limit  int64 // first id of the next unreserved block
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
	return p, nil
}

func (p *producerIDs) next() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nextID >= p.limit {
		limit := p.nextID + producerIDBlock
		if err := atomicfile.Write(p.path, []byte(strconv.FormatInt(limit, 10))); err != nil {
			return 0, err
		}
		p.limit = limit
	}
	id := p.nextID
	p.nextID++
	return id, nil
}
