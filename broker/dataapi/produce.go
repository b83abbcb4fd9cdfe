package dataapi

// Produce.
//
// v3+ carries RecordBatch v2, which is what the log stores; v0-2 (message
// sets v0/v1) is advertised only because librdkafka looks for it, and a real
// v0-2 produce is answered UNSUPPORTED_FOR_MESSAGE_FORMAT on every partition.
//
// Appends happen on the connection's read goroutine, in request order, so an
// idempotent producer's pipelined batches reach the log in sequence order.
// acks=1 is answered after the append, acks=all after the fsync that covers
// the batch (one fsync answers every request waiting on it), acks=0 never.
// Transactional batches are appended only within their producer's open
// transaction (produce_txn.go); control batches come only from the
// transaction coordinator, never in a Produce request.
//
// A partition's batches are appended as a unit: each is checked down to its
// records (see package log) and, for idempotent producers, its sequence,
// before any is written, so a refused request leaves nothing for the
// client's retry to duplicate. Records that lie (offset deltas, counts,
// lengths) get INVALID_RECORD naming the record, also in RecordErrors from
// v8; a batch that fails its CRC or does not decompress gets CORRUPT_MESSAGE.
//
// A topic whose compression.type names a codec stores each batch in it:
// a batch in another codec is validated as sent, then re-encoded
// (log.AppendBatchesIn), keeping its offsets, timestamps and producer
// fields, and refused with MESSAGE_TOO_LARGE if that makes it outgrow
// max.message.bytes.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/internal/recordbatch"
)

func init() {
	// From v0 for librdkafka (see above); v13+ names topics by id only, and
	// clients fall back to the highest version both sides know.
	add(0, 0, 12, func(h *Handlers) kafkaapi.Serve {
		return func(_ kafkaapi.Conn, req *kafkaapi.Request) *netserver.Pending {
			return h.produce(req, req.Request.(*kmsg.ProduceRequest))
		}
	})
}

// appended is what a partition's append left for the answer: where the last
// batch landed and, for acks=all, which offset must be flushed.
type appended struct {
	part   replication.Partition
	last   int64 // last offset appended
	ti, pi int   // the partition's place in the response
	code   int16 // acks=all's outcome (WaitAcked)
	err    error
}

// produceRefusal says why the client of req may not write topic, or "" when
// it may. With an authorizer the ACLs decide (Write on the topic), internal
// topics included; without one, the internal topics' client-id rule.
func (h *Handlers) produceRefusal(req *kafkaapi.Request, topic string) string {
	if h.authz != nil {
		return h.authz.TopicRefusal(req.Who, kmsg.ACLOperationWrite, "write", topic)
	}
	return h.internalRefusal(req.ClientID, topic, "write")
}

func (h *Handlers) produce(req *kafkaapi.Request, r *kmsg.ProduceRequest) *netserver.Pending {
	resp := kmsg.NewPtrProduceResponse()
	resp.ThrottleMillis = h.throttleProduce(req, r) // throttle.go
	acks := r.Acks
	allow := h.decompressAllowance(r) // produce_bombs.go
	var waits []appended
	// Internal topics are written only by their owners (the root's
	// internal_topics.go, Config.InternalRefusal).
	var small [1]topicLookup
	looks := h.lookupTopics(req, r, small[:0]) // produce_open.go
	txnRefused := r.TransactionID != nil && !h.authz.MayTxn(req.Who, kmsg.ACLOperationWrite, *r.TransactionID)
	ahead := h.newAheadOpener(r, looks, txnRefused)
	for ti, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		refusal, t, tcode := looks[ti].refusal, looks[ti].t, looks[ti].code
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			switch {
			case acks != 0 && acks != 1 && acks != -1:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case r.Version < 3:
				sp.ErrorCode = kerr.UnsupportedForMessageFormat.Code
				setMessage(&sp, "Tributary stores record batches v2 only: use Produce v3 or newer")
			case txnRefused:
				sp.ErrorCode = acl.TxnRefused
				setMessage(&sp, "not allowed to write as transactional id "+*r.TransactionID)
			case refusal != "":
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				setMessage(&sp, refusal)
			case tcode != 0:
				sp.ErrorCode = tcode
			default:
				ahead.before(rt.Topic, rp.Partition)
				part, code := h.replicas.Lookup(t, rp.Partition)
				if code == 0 {
					code = part.Writable(acks)
				}
				if code != 0 {
					sp.ErrorCode = code
					break
				}
				if code, msg := h.producers(req.Principal, rp.Records); code != 0 {
					sp.ErrorCode = code
					setMessage(&sp, msg)
					break
				}
				last := int64(-1)
				if code, msg := h.transactionalAppend(r.TransactionID, rt.Topic, rp.Partition, part.Log(), rp.Records, func(guard log.TxnGuard) {
					last = appendBatches(&part, rp.Records, r.Version, &sp, h.topics.ProduceLimits(t), allow, guard)
				}); code != 0 {
					sp.ErrorCode = code
					setMessage(&sp, msg)
					break
				}
				if sp.ErrorCode == 0 && acks == -1 && last >= 0 {
					waits = append(waits, appended{part: part, last: last, ti: len(resp.Topics), pi: len(st.Partitions)})
				}
			}
			h.metrics.Produced(rt.Topic, rp.Records, sp.ErrorCode)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if acks == 0 {
		return netserver.Ready(nil)
	}
	if len(waits) == 0 {
		return kafkaapi.Ready(req, resp)
	}
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if !anyReplicated(waits) {
		return h.answerWhenFlushed(req, resp, waits, timeout)
	}
	return netserver.Later(func() netserver.Response {
		ctx, cancel := context.WithCancel(h.life)
		defer cancel()
		ctx, cancelT := context.WithTimeout(ctx, timeout)
		defer cancelT()
		// Wait on every partition at once: each wait asks its log for a
		// flush, and the fsyncs of different partitions overlap. A request
		// of one partition (a client's usual batch) waits here: a goroutine
		// of its own would cost its start, its stack's growth through the
		// fsync and a wake-up.
		if len(waits) == 1 {
			w := &waits[0]
			w.code, w.err = w.part.WaitAcked(ctx, w.last)
		} else {
			var wg sync.WaitGroup
			for i := range waits {
				w := &waits[i]
				wg.Go(func() { w.code, w.err = w.part.WaitAcked(ctx, w.last) })
			}
			wg.Wait()
		}
		setWaitErrors(resp, waits)
		return kafkaapi.Encode(req, resp)
	})
}

// answerWhenFlushed answers an acks=all request whose partitions each have
// one replica from the log flushes that cover its batches: the answer is
// encoded now, and the last flush it needs completes it (re-encoding it
// only if a wait failed), so no goroutine waits per request and a flush
// hands its requests to their connections' writers itself.
func (h *Handlers) answerWhenFlushed(req *kafkaapi.Request, resp *kmsg.ProduceResponse, waits []appended, timeout time.Duration) *netserver.Pending {
	a := &flushedAnswer{p: netserver.Deferred(), ok: kafkaapi.Encode(req, resp)}
	a.left.Store(int32(len(waits)))
	var ctx context.Context
	ctx, a.cancel = context.WithTimeout(h.life, timeout)
	for i := range waits {
		w := &waits[i]
		w.part.WhenAcked(ctx, w.last, func(code int16, err error) {
			w.code, w.err = code, err
			if a.left.Add(-1) != 0 {
				return
			}
			a.cancel()
			a.p.Complete(func() netserver.Response {
				if !slices.ContainsFunc(waits, func(w appended) bool { return w.err != nil }) {
					return a.ok
				}
				setWaitErrors(resp, waits)
				return kafkaapi.Encode(req, resp)
			})
		})
	}
	return a.p
}

// flushedAnswer is an acks=all answer waiting for its partitions' flushes.
type flushedAnswer struct {
	p      *netserver.Pending
	ok     netserver.Encoded // the answer if every wait succeeds
	left   atomic.Int32
	cancel context.CancelFunc
}

// anyReplicated reports whether a wait is on a replicated partition, which
// must also wait for its followers (WaitAcked).
func anyReplicated(waits []appended) bool {
	return slices.ContainsFunc(waits, func(w appended) bool { return w.part.Topic().Replicated() })
}

// setWaitErrors sets the error of each partition whose acks=all wait
// failed.
func setWaitErrors(resp *kmsg.ProduceResponse, waits []appended) {
	for _, w := range waits {
		if w.err == nil {
			continue
		}
		sp := &resp.Topics[w.ti].Partitions[w.pi]
		sp.ErrorCode = w.code
		setMessage(sp, "waiting for the flush that covers this batch: "+w.err.Error())
	}
}

// appendBatches appends one partition's batches as a unit and fills sp:
// every batch is checked (size, no control batch, then the log's full
// validation) before any is written, so a refused request leaves nothing
// behind for the client's retry to duplicate. It returns the last offset
// written (or already present, for duplicates), -1 if none.
func appendBatches(part *replication.Partition, records []byte, version int16, sp *kmsg.ProduceResponseTopicPartition, lim Limits, allow *log.Allowance, guard log.TxnGuard) int64 {
	var small [2][]byte
	batches := small[:0]
	for len(records) > 0 {
		if len(records) < recordbatch.HeaderSize {
			sp.ErrorCode = kerr.CorruptMessage.Code
			setMessage(sp, "records end with a partial record batch header")
			return -1
		}
		size := recordbatch.FramedSize(records)
		if size > int64(lim.MaxMessageBytes) {
			sp.ErrorCode = kerr.MessageTooLarge.Code
			setMessage(sp, fmt.Sprintf("record batch of %d bytes is larger than the topic's max.message.bytes=%d", size, lim.MaxMessageBytes))
			return -1
		}
		if size < recordbatch.HeaderSize || size > int64(len(records)) {
			sp.ErrorCode = kerr.CorruptMessage.Code
			setMessage(sp, "record batch length field does not match the records sent")
			return -1
		}
		batch := records[:size]
		records = records[size:]
		if h := recordbatch.ParseHeader(batch); h.Magic == 2 {
			if h.Control() {
				sp.ErrorCode = kerr.InvalidRecord.Code
				setMessage(sp, "control batches (transaction markers) are written by the transaction coordinator only")
				return -1
			}
			// Kafka refuses zstd from clients too old to know it, which
			// could not read it back either.
			if h.Codec() == recordbatch.CodecZstd && version < 7 {
				sp.ErrorCode = kerr.UnsupportedCompressionType.Code
				setMessage(sp, "zstd-compressed batches need Produce v7 or newer")
				return -1
			}
		}
		if lim.LogAppendTime {
			// A damaged batch is left unstamped for the log's validation
			// to refuse (a fresh CRC would hide the damage).
			sp.LogAppendTime = time.Now().UnixMilli()
			recordbatch.StampLogAppendTime(batch, sp.LogAppendTime)
		}
		batches = append(batches, batch)
	}
	if len(batches) == 0 {
		sp.ErrorCode = kerr.CorruptMessage.Code
		setMessage(sp, "no record batch for the partition")
		return -1
	}
	// The topic's compression.type decides the stored codec.
	res, code, err := part.Append(batches, replication.AppendOptions{
		Recompress: lim.Recompress, Codec: lim.Codec, MaxBatchBytes: int64(lim.MaxMessageBytes), Allow: allow, Guard: guard,
	})
	if err != nil {
		sp.ErrorCode = code
		setMessage(sp, err.Error())
		var rerr *log.RecordError
		if errors.As(err, &rerr) {
			// Encoded from Produce v8 on; older versions drop it.
			msg := rerr.Reason
			sp.ErrorRecords = append(sp.ErrorRecords, kmsg.ProduceResponseTopicPartitionErrorRecord{RelativeOffset: rerr.Index, ErrorMessage: &msg})
		}
		return -1
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogStartOffset = part.Log().StartOffset()
	return res.LastOffset
}

func setMessage(sp *kmsg.ProduceResponseTopicPartition, msg string) {
	sp.ErrorMessage = &msg
}
