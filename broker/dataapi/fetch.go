package dataapi

// Fetch.
//
// Serves whole record batches of flushed data (to a follower, also what is
// not flushed yet: see the partition facade's ReadBound), from the batch
// containing the requested offset. The response is long-polled: when
// fewer than MinBytes are ready it waits until a requested partition's
// high watermark moves (for a follower, until the leader appends) or
// MaxWaitMillis passes. MaxBytes bounds the
// response and PartitionMaxBytes each partition, except that the first
// batch of the first partition with data is always sent whole, so a
// consumer never sticks on a batch larger than its limits. Fetch sessions (v7+) are declined with session id 0, which
// clients answer with full fetches. A read_committed fetch stops at the
// last stable offset and lists the aborted transactions of what it returns
// (fetch_txn.go). Records go out with sendfile (fetchwrite.go).

import (
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/netserver"
)

func init() {
	// v0-3 carry message sets v0/v1, which the log does not store; v13+ names
	// topics by id only.
	add(1, 4, 12, func(h *Handlers) kafkaapi.Serve {
		return func(_ kafkaapi.Conn, req *kafkaapi.Request) *netserver.Pending {
			return h.fetch(req, req.Request.(*kmsg.FetchRequest))
		}
	})
}

// defaultFetchMaxBytes applies to versions before MaxBytes existed or when
// a client sends 0 (fetch.max.bytes default).
const defaultFetchMaxBytes = 50 << 20

type fetchTopic struct {
	name       string
	partitions []fetchPartition
}

type fetchPartition struct {
	partition     int32
	errorCode     int16
	highWatermark int64
	logStart      int64
	records       log.Slice // Size 0: no records
	lastStable    int64     // set with highWatermark (fetch_txn.go)
	aborted       []log.AbortedTxn
}

func (h *Handlers) fetch(req *kafkaapi.Request, r *kmsg.FetchRequest) *netserver.Pending {
	if h.authz != nil {
		if p := h.authorizeFetch(req, r); p != nil {
			return p
		}
	}
	if p := h.throttledFetch(req); p != nil { // over a consumer quota (throttle.go)
		return p
	}
	return netserver.Later(func() netserver.Response { return h.countFetch(req, h.fetched(h.serveFetch(req, r))) })
}

// fetched records what a Fetch response carries, and returns it.
func (h *Handlers) fetched(f *fetchResponse) netserver.Response {
	for _, t := range f.topics {
		var bytes int64
		for _, p := range t.partitions {
			if p.errorCode != 0 {
				h.metrics.PartitionError("Fetch", p.errorCode)
			}
			bytes += p.records.Size
		}
		if bytes > 0 {
			h.metrics.Fetched(t.name, bytes)
		}
	}
	return f
}

// authorizeFetch trims the topics its client may not read (Read on the
// topic) from a fetch, or answers it when nothing is left. A replica's
// fetch (replica id >= 0) moves the high watermark and the ISR: only
// brokers (ClusterAction on the cluster) may send one. A fetch naming both
// allowed and refused topics is served for the allowed ones only: clients
// learn of the refusal from Metadata, which they ask first.
func (h *Handlers) authorizeFetch(req *kafkaapi.Request, r *kmsg.FetchRequest) *netserver.Pending {
	refuse := func(code int16) func(kmsg.FetchRequestTopic) fetchTopic {
		return func(t kmsg.FetchRequestTopic) fetchTopic {
			ft := fetchTopic{name: t.Topic}
			for _, p := range t.Partitions {
				ft.partitions = append(ft.partitions, fetchPartition{partition: p.Partition,
					errorCode: code, highWatermark: -1, logStart: -1})
			}
			return ft
		}
	}
	if r.ReplicaID >= 0 {
		if h.authz.MayCluster(req.Who, kmsg.ACLOperationClusterAction) {
			return nil
		}
		_, refused := acl.Filter(r.Topics, func(kmsg.FetchRequestTopic) bool { return false }, refuse(acl.ClusterRefused))
		return netserver.Ready(newFetchResponse(req, refused))
	}
	kept, refused := acl.Filter(r.Topics, func(t kmsg.FetchRequestTopic) bool {
		return h.authz.MayTopic(req.Who, kmsg.ACLOperationRead, t.Topic)
	}, refuse(acl.TopicRefused))
	if len(kept) == 0 && len(refused) > 0 {
		return netserver.Ready(newFetchResponse(req, refused))
	}
	r.Topics = kept
	return nil
}

func (h *Handlers) serveFetch(req *kafkaapi.Request, r *kmsg.FetchRequest) *fetchResponse {
	deadline := time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	for {
		topics, size, anyError, watches := h.readFetch(r)
		wait := time.Until(deadline)
		if size >= int64(r.MinBytes) || anyError || wait <= 0 || len(watches) == 0 {
			return newFetchResponse(req, topics)
		}
		releaseFetch(topics)
		if !h.awaitFlush(watches, wait) {
			topics, _, _, _ = h.readFetch(r)
			return newFetchResponse(req, topics)
		}
	}
}

// awaitFlush blocks until one of the watched partitions has new flushed data
// (true), or the wait ends or the broker shuts down (false).
func (h *Handlers) awaitFlush(watches []<-chan struct{}, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	cases := make([]reflect.SelectCase, 0, len(watches)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(h.closing)})
	for _, w := range watches {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen >= 2
}

// readFetch reads what every requested partition has ready. The watch
// channels are taken before reading, so a flush between the read and the
// wait is not missed.
func (h *Handlers) readFetch(r *kmsg.FetchRequest) (topics []fetchTopic, size int64, anyError bool, watches []<-chan struct{}) {
	budget := int64(r.MaxBytes)
	if r.Version < 3 || budget <= 0 {
		budget = defaultFetchMaxBytes
	}
	for _, rt := range r.Topics {
		ft := fetchTopic{name: rt.Topic}
		t, tcode := h.topics.Lookup(rt.Topic, false)
		for _, rp := range rt.Partitions {
			fp := fetchPartition{partition: rp.Partition, highWatermark: -1, logStart: -1}
			if tcode != 0 {
				fp.errorCode = tcode
				anyError = true
				ft.partitions = append(ft.partitions, fp)
				continue
			}
			part, code := h.replicas.Lookup(t, rp.Partition)
			if code == 0 && r.Version < 10 {
				code = h.topics.FetchCodecCheck(t) // zstd needs Fetch v10+
			}
			if code != 0 {
				fp.errorCode = code
				anyError = true
				ft.partitions = append(ft.partitions, fp)
				continue
			}
			l := part.Log()
			watches = append(watches, l.Changed())
			bound, code := part.ReadBound(r.ReplicaID, rp.FetchOffset)
			if code != 0 {
				fp.errorCode = code
				anyError = true
				ft.partitions = append(ft.partitions, fp)
				continue
			}
			if bound.Watch != nil {
				watches = append(watches, bound.Watch)
			}
			end := bound.End
			fp.highWatermark, fp.logStart = bound.HighWatermark, l.StartOffset()
			fp.lastStable = part.LastStable(bound.HighWatermark)
			committed := r.IsolationLevel == 1 && r.ReplicaID < 0
			if committed {
				end = fp.lastStable
			}
			if budget > 0 || size == 0 {
				limit := min(int64(rp.PartitionMaxBytes), budget)
				s, err := part.Read(rp.FetchOffset, max(limit, 1), end)
				switch {
				case err != nil:
					fp.errorCode = kafkaerr.OfStorage(err)
					anyError = true
				case s.Size > limit && size > 0:
					// Only the first partition with data may exceed the
					// limits; this one waits for the next fetch.
					s.Release()
				default:
					fp.records = s
					if committed {
						fp.aborted = l.AbortedTransactions(rp.FetchOffset, end)
					}
					size += s.Size
					budget -= s.Size
					if r.ReplicaID >= 0 {
						part.SentToFollower(r.ReplicaID, s.Size)
					}
				}
			}
			ft.partitions = append(ft.partitions, fp)
		}
		topics = append(topics, ft)
	}
	return topics, size, anyError, watches
}

func releaseFetch(topics []fetchTopic) {
	for i := range topics {
		for j := range topics[i].partitions {
			topics[i].partitions[j].records.Release()
		}
	}
}
