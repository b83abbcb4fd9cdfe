// Package dataapi serves the APIs that move records: Produce, Fetch,
// ListOffsets, DeleteRecords and OffsetForLeaderEpoch, with what rides on
// them (the transactional produce check, the decompression allowance, the
// client quotas' throttling of Produce and Fetch, the zero-copy Fetch
// writer).
//
// What a caller may rely on:
//   - Produce appends on the connection's read goroutine, in request
//     order, so an idempotent producer's pipelined batches reach the log in
//     sequence order; acks=all is answered only once the batch is flushed
//     (and, replicated, held by the in-sync replicas).
//   - A partition's batches are validated as a unit before any is written:
//     a refused request leaves nothing for its retry to duplicate.
//   - Fetch sends only what the partition facade's ReadBound allows (a
//     consumer never sees unflushed or unreplicated records), and records
//     leave their segment files by sendfile, not through user space.
//
// Partitions are reached through broker/replication's facade
// (Manager.Lookup), which hides one replica against many and flushed
// against unflushed. One file per API holds its versions, its handler and
// its ACL rule (broker/acl's helper). The broker builds Handlers with New
// from what they use and adds them to its registry with Register; nothing
// here imports the root broker.
package dataapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/quota"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/cluster"
)

// Config is what the data APIs use from the broker.
type Config struct {
	Replicas *replication.Manager // the partition facade (Lookup)
	// Authz decides each request (broker/acl's helper); nil allows
	// everything.
	Authz  *acl.Authorizer
	Topics Topics
	// Producers checks that a partition's batches use only producer ids
	// handed to the request's principal: a code and message, 0 if they do.
	Producers func(principal string, records []byte) (int16, string)
	// InternalRefusal says why a client (by its client id) may not do
	// action on an internal topic without an authorizer, "" if it may.
	InternalRefusal func(clientID, topic, action string) string
	Txns            Txns
	Quotas          *quota.Manager
	Metrics         Metrics
	// MaxDecompressedBytes is what one batch may decompress to (the log's
	// limit, defaults applied); a Produce request's allowance is a few
	// batches' worth (produce_bombs.go).
	MaxDecompressedBytes int64
	// Life is cancelled when the broker starts shutting down, as Closing
	// is closed: acks=all waits and long-polled fetches end then.
	Life    context.Context
	Closing <-chan struct{}
	Logger  *slog.Logger
}

// Topics is what the data APIs read of topics.
type Topics interface {
	// Lookup finds a topic, auto-creating it when autoCreate allows and
	// the broker does; the code is what the client sees otherwise.
	Lookup(name string, autoCreate bool) (cluster.Topic, int16)
	// ProduceLimits are the topic's settings Produce applies.
	ProduceLimits(t cluster.Topic) Limits
	// FetchCodecCheck is UNSUPPORTED_COMPRESSION_TYPE for a Fetch older
	// than v10 from a topic stored in zstd, else 0.
	FetchCodecCheck(t cluster.Topic) int16
}

// Limits are the per-topic settings Produce checks and applies.
type Limits struct {
	MaxMessageBytes int32
	LogAppendTime   bool
	Recompress      bool      // store batches in Codec (compression.type)
	Codec           log.Codec // the topic's codec when Recompress is set
}

// Txns is the transaction coordinator as transactional produce asks it
// (produce_txn.go). The coordinator is the concrete type, not an
// interface: the append runs inside its WithVerified, and a call through
// an interface would move the produce loop's variables the append
// closure holds to the heap, five allocations a request.
type Txns struct {
	Coordinator *txn.Coordinator
	// Refusal is NOT_COORDINATOR when this broker does not coordinate id,
	// 0 when it does.
	Refusal func(id string) int16
	// VerifyRemote asks id's coordinator, another broker, whether the
	// producer's transaction holds tp: 0 if it does.
	VerifyRemote func(ctx context.Context, id string, pid int64, epoch int16, tp txn.TP) int16
}

// Metrics are the broker's event hooks the data APIs call; each is
// cheap when metrics are off.
type Metrics interface {
	// Produced records one partition of a Produce request after its append.
	Produced(topic string, records []byte, code int16)
	// Fetched records the record bytes a Fetch response carries of topic.
	Fetched(topic string, bytes int64)
	// PartitionError records a partition answered with code by api.
	PartitionError(api string, code int16)
	// Throttled records a throttle given to a client over its quota; kind
	// is produce or fetch.
	Throttled(kind string, d time.Duration)
}

// Handlers serves the data APIs of one broker.
type Handlers struct {
	replicas        *replication.Manager
	authz           *acl.Authorizer
	topics          Topics
	producers       func(principal string, records []byte) (int16, string)
	internalRefusal func(clientID, topic, action string) string
	txns            Txns
	quotas          *quota.Manager
	metrics         Metrics
	maxDecompressed int64
	life            context.Context
	closing         <-chan struct{}
	logger          *slog.Logger
}

// New returns the data APIs over cfg. It only keeps cfg: the broker may
// build them before it serves.
func New(cfg Config) *Handlers {
	return &Handlers{
		replicas: cfg.Replicas, authz: cfg.Authz, topics: cfg.Topics, producers: cfg.Producers,
		internalRefusal: cfg.InternalRefusal, txns: cfg.Txns, quotas: cfg.Quotas, metrics: cfg.Metrics,
		maxDecompressed: cfg.MaxDecompressedBytes, life: cfg.Life, closing: cfg.Closing, logger: cfg.Logger,
	}
}

// apis are this package's APIs, each declared in its file's init.
var apis kafkaapi.APIs[*Handlers]

// add declares, from an API file's init, that h serves key in versions
// min..max with serve(h).
func add(key, min, max int16, serve func(*Handlers) kafkaapi.Serve) { apis.Add(key, min, max, serve) }

// Register adds every data API of this package to r.
func (h *Handlers) Register(r *kafkaapi.Registry) {
	apis.Register(r, h)
}
