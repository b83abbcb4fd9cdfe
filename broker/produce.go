package broker

// Produce (key 0), v0-12.
//
// v3+ carries RecordBatch v2, which is what the log stores; v0-2 (message
// sets v0/v1) is advertised only because librdkafka looks for it, and a real
// v0-2 produce is answered UNSUPPORTED_FOR_MESSAGE_FORMAT on every partition.
//
// Appends happen on the connection's read goroutine, in request order, so an
// idempotent producer's pipelined batches reach the log in sequence order.
// acks=1 is answered after the append, acks=all after the fsync that covers
// the batch (one fsync answers every request waiting on it), acks=0 never.
// Transactional and control batches are refused: no transactions.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
)

const (
	attrTransactional = 0x10
	attrControl       = 0x20
)

// appended is what a partition's append left for the answer: where the last
// batch landed and, for acks=all, which offset must be flushed.
type appended struct {
	log    *log.Log
	last   int64 // last offset appended
	ti, pi int   // the partition's place in the response
}

func (b *Broker) produce(req *request, r *kmsg.ProduceRequest) *pending {
	resp := kmsg.NewPtrProduceResponse()
	acks := r.Acks
	var waits []appended
	for _, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		t, tcode := b.lookupTopic(rt.Topic, true)
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
			case r.TransactionID != nil:
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				setMessage(&sp, "Tributary does not support transactions")
			case tcode != 0:
				sp.ErrorCode = tcode
			default:
				l, code := b.localPartition(t, rp.Partition)
				if code != 0 {
					sp.ErrorCode = code
					break
				}
				last := b.appendBatches(l, rp.Records, &sp)
				b.storageWritten(l, sp.ErrorCode)
				if sp.ErrorCode == 0 && acks == -1 && last >= 0 {
					waits = append(waits, appended{log: l, last: last, ti: len(resp.Topics), pi: len(st.Partitions)})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if acks == 0 {
		return ready(nil)
	}
	if len(waits) == 0 {
		return ready(encode(req, resp))
	}
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return later(func() response {
		ctx, cancel := b.ctx()
		defer cancel()
		ctx, cancelT := context.WithTimeout(ctx, timeout)
		defer cancelT()
		// Wait on every partition at once: each wait asks its log for a
		// flush, and the fsyncs of different partitions overlap.
		errs := make([]error, len(waits))
		var wg sync.WaitGroup
		for i, w := range waits {
			wg.Go(func() { errs[i] = w.log.WaitFlushed(ctx, w.last) })
		}
		wg.Wait()
		for i, err := range errs {
			if err == nil {
				continue
			}
			sp := &resp.Topics[waits[i].ti].Partitions[waits[i].pi]
			if errors.Is(err, context.DeadlineExceeded) {
				sp.ErrorCode = kerr.RequestTimedOut.Code
			} else {
				sp.ErrorCode = b.storageError(waits[i].log, err)
			}
			setMessage(sp, "waiting for the flush that covers this batch: "+err.Error())
		}
		return encode(req, resp)
	})
}

// appendBatches appends every batch of one partition's records, stopping at
// the first refused one, and fills sp. It returns the last offset written
// (or already present, for duplicates), -1 if none.
func (b *Broker) appendBatches(l *log.Log, records []byte, sp *kmsg.ProduceResponseTopicPartition) int64 {
	last := int64(-1)
	first := true
	for len(records) > 0 {
		if len(records) < 61 {
			sp.ErrorCode = kerr.CorruptMessage.Code
			setMessage(sp, "records end with a partial record batch header")
			return last
		}
		size := int64(int32(binary.BigEndian.Uint32(records[8:]))) + 12
		if size > int64(b.cfg.MaxMessageBytes) {
			sp.ErrorCode = kerr.MessageTooLarge.Code
			setMessage(sp, fmt.Sprintf("record batch of %d bytes is larger than message.max.bytes=%d", size, b.cfg.MaxMessageBytes))
			return last
		}
		if size < 61 || size > int64(len(records)) {
			sp.ErrorCode = kerr.CorruptMessage.Code
			setMessage(sp, "record batch length field does not match the records sent")
			return last
		}
		batch := records[:size]
		records = records[size:]
		if batch[16] == 2 {
			if attrs := binary.BigEndian.Uint16(batch[21:]); attrs&(attrTransactional|attrControl) != 0 {
				sp.ErrorCode = kerr.InvalidRecord.Code
				setMessage(sp, "transactional and control batches are not supported")
				return last
			}
		}
		res, err := l.Append(batch)
		if err != nil {
			sp.ErrorCode = b.storageError(l, err)
			setMessage(sp, err.Error())
			return last
		}
		if first {
			sp.BaseOffset = res.BaseOffset
			first = false
		}
		last = res.LastOffset
	}
	sp.LogStartOffset = l.StartOffset()
	return last
}

func setMessage(sp *kmsg.ProduceResponseTopicPartition, msg string) {
	sp.ErrorMessage = &msg
}

// storageErrorCode maps the storage engine's errors to Kafka error codes.
func storageErrorCode(err error) int16 {
	switch {
	case errors.Is(err, log.ErrCorruptBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, log.ErrUnsupportedMagic):
		return kerr.UnsupportedForMessageFormat.Code
	case errors.Is(err, log.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, log.ErrClosed), errors.Is(err, context.Canceled):
		// The broker is shutting down; the client retries elsewhere or later.
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.KafkaStorageError.Code
}
