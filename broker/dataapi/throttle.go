package dataapi

// The throttling of Produce and Fetch by client quotas (broker/quota has
// the model; broker/securityapi serves DescribeClientQuotas and
// AlterClientQuotas). It stays beside Produce and Fetch: it counts their
// bytes on their hot path and mutes the connection (netserver.Throttle).

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/broker/quota"
)

// quotaExempt is true for the broker's own in-process clients (the
// standalone registry, the audit and loader helpers it hosts): they are
// not among the users a default-user quota is meant for, and throttling
// them would slow the registry's writes for every user's traffic. The
// principal, not the quota user, is compared, so that no SASL user can
// name itself into the exemption.
func quotaExempt(req *kafkaapi.Request) bool { return req.Principal == acl.InternalPrincipal }

// throttleProduce counts a produce request's record bytes against its
// client's producer quota and returns the response's throttle_time_ms; a
// client over its quota has its connection muted for that long. The
// records are appended regardless, as in Kafka.
func (h *Handlers) throttleProduce(req *kafkaapi.Request, r *kmsg.ProduceRequest) int32 {
	var n int64
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			n += int64(len(p.Records))
		}
	}
	if quotaExempt(req) {
		return 0
	}
	d := h.quotas.Record(quota.User(req.Principal), req.ClientID, quota.ProducerByteRate, n)
	req.Quota.Mute(d)
	h.metrics.Throttled("produce", d)
	return quota.ThrottleMillis(d)
}

// throttledFetch answers at once, with no records and the time the client
// must wait, a fetch by a client that still owes bytes of its consumer
// quota; nil when it owes nothing.
func (h *Handlers) throttledFetch(req *kafkaapi.Request) *netserver.Pending {
	if quotaExempt(req) {
		return nil
	}
	d := h.quotas.Owing(quota.User(req.Principal), req.ClientID, quota.ConsumerByteRate)
	if d <= 0 {
		return nil
	}
	req.Quota.Mute(d)
	h.metrics.Throttled("fetch", d)
	resp := kmsg.NewPtrFetchResponse()
	resp.ThrottleMillis = quota.ThrottleMillis(d)
	return kafkaapi.Ready(req, resp)
}

// countFetch counts a fetch response's bytes against its client's consumer
// quota. When they put the client over it, the response carries the
// throttle and the connection is muted for it.
func (h *Handlers) countFetch(req *kafkaapi.Request, r netserver.Response) netserver.Response {
	f, ok := r.(*fetchResponse)
	if !ok || quotaExempt(req) {
		return r
	}
	d := h.quotas.Record(quota.User(req.Principal), req.ClientID, quota.ConsumerByteRate, f.size)
	if d > 0 {
		req.Quota.Mute(d)
		h.metrics.Throttled("fetch", d)
		setFetchThrottle(req, f, d)
	}
	return r
}

// setFetchThrottle writes throttle_time_ms into an encoded fetch response:
// the protocol puts it right after the response header (size, correlation
// id, and from v12 the header's tag byte).
func setFetchThrottle(req *kafkaapi.Request, f *fetchResponse, d time.Duration) {
	at := 8
	if req.GetVersion() >= 12 {
		at++
	}
	binary.BigEndian.PutUint32(f.pieces[0].head[at:], uint32(quota.ThrottleMillis(d)))
}
