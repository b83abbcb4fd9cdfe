package broker

// DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), v0-1, and
// the throttling of Produce and Fetch (broker/quota has the model).
//
// Only producer_byte_rate and consumer_byte_rate are served, for the
// entity types user and client-id; another key or type (request_percentage,
// controller_mutation_rate, ip) is refused with INVALID_REQUEST naming it,
// rather than stored and silently not enforced. A rate must be a whole
// number of bytes per second, at least 1. Describing needs DESCRIBE_CONFIGS
// on the cluster and altering ALTER_CONFIGS, as in Kafka.

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/quota"
)

func init() {
	register(48, 0, 1, func(b *Broker, _ *conn, req *request) *pending {
		return ready(encode(req, b.describeClientQuotas(req, req.Request.(*kmsg.DescribeClientQuotasRequest))))
	})
	register(49, 0, 1, func(b *Broker, _ *conn, req *request) *pending {
		r := req.Request.(*kmsg.AlterClientQuotasRequest)
		return later(func() response { return encode(req, b.alterClientQuotas(req, r)) })
	})
}

func (b *Broker) describeClientQuotas(req *request, r *kmsg.DescribeClientQuotasRequest) *kmsg.DescribeClientQuotasResponse {
	resp := kmsg.NewPtrDescribeClientQuotasResponse()
	fail := func(code int16, msg string) *kmsg.DescribeClientQuotasResponse {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp
	}
	if b.authz != nil && !b.mayCluster(req, kmsg.ACLOperationDescribeConfigs) {
		return fail(kerr.ClusterAuthorizationFailed.Code, "describing client quotas needs DESCRIBE_CONFIGS on the cluster")
	}
	seen := map[string]bool{}
	for _, c := range r.Components {
		if c.EntityType != quota.EntityUser && c.EntityType != quota.EntityClientID {
			return fail(kerr.InvalidRequest.Code, fmt.Sprintf("entity type %q is not served: Tributary has quotas for %q and %q", c.EntityType, quota.EntityUser, quota.EntityClientID))
		}
		if seen[c.EntityType] {
			return fail(kerr.InvalidRequest.Code, fmt.Sprintf("entity type %q filtered twice", c.EntityType))
		}
		seen[c.EntityType] = true
		if c.MatchType > 2 {
			return fail(kerr.InvalidRequest.Code, fmt.Sprintf("unknown match type %d", c.MatchType))
		}
	}
	t := b.quotas.Table()
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{} // null means failure to Kafka's clients
	for e, values := range t {
		if !quota.Matches(e, r.Components, r.Strict) || len(values) == 0 {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range e.Components() {
			ec := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ec.Type, ec.Name = c.Type, c.Name
			entry.Entity = append(entry.Entity, ec)
		}
		for k, v := range values {
			ev := kmsg.NewDescribeClientQuotasResponseEntryValue()
			ev.Key, ev.Value = k, v
			entry.Values = append(entry.Values, ev)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp
}

func (b *Broker) alterClientQuotas(req *request, r *kmsg.AlterClientQuotasRequest) *kmsg.AlterClientQuotasResponse {
	resp := kmsg.NewPtrAlterClientQuotasResponse()
	allowed := b.authz == nil || b.mayCluster(req, kmsg.ACLOperationAlterConfigs)
	for _, entry := range r.Entries {
		res := kmsg.NewAlterClientQuotasResponseEntry()
		comps := make([]quota.Component, 0, len(entry.Entity))
		for _, c := range entry.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = c.Type, c.Name
			res.Entity = append(res.Entity, re)
			comps = append(comps, quota.Component{Type: c.Type, Name: c.Name})
		}
		fail := func(code int16, msg string) {
			res.ErrorCode, res.ErrorMessage = code, &msg
		}
		e, err := quota.EntityOf(comps)
		switch {
		case !allowed:
			fail(kerr.ClusterAuthorizationFailed.Code, "altering client quotas needs ALTER_CONFIGS on the cluster")
		case err != nil:
			fail(kerr.InvalidRequest.Code, err.Error())
		default:
			if err := quota.CheckOps(entry.Ops); err != nil {
				fail(kerr.InvalidRequest.Code, err.Error())
				break
			}
			if r.ValidateOnly {
				break
			}
			t, err := b.quotas.Alter(e, entry.Ops)
			if err != nil {
				fail(kerr.UnknownServerError.Code, err.Error())
				b.logger.Error("altering client quotas failed", "entity", quota.EntityString(comps), "err", err)
				break
			}
			b.logger.Info("client quotas altered", "entity", quota.EntityString(comps), "quotas", t[e])
		}
		resp.Entries = append(resp.Entries, res)
	}
	return resp
}

// quotaExempt is true for the broker's own in-process clients (the
// standalone registry, the audit and loader helpers it hosts): they are
// not among the users a default-user quota is meant for, and throttling
// them would slow the registry's writes for every user's traffic. The
// principal, not the quota user, is compared, so that no SASL user can
// name itself into the exemption.
func quotaExempt(req *request) bool { return req.principal == InternalPrincipal }

// throttleProduce counts a produce request's record bytes against its
// client's producer quota and returns the response's throttle_time_ms; a
// client over its quota has its connection muted for that long. The
// records are appended regardless, as in Kafka.
func (b *Broker) throttleProduce(req *request, r *kmsg.ProduceRequest) int32 {
	var n int64
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			n += int64(len(p.Records))
		}
	}
	if quotaExempt(req) {
		return 0
	}
	d := b.quotas.Record(quota.User(req.principal), req.clientID, quota.ProducerByteRate, n)
	req.quota.Mute(d)
	b.metrics.throttled("produce", d)
	return quota.ThrottleMillis(d)
}

// throttledFetch answers at once, with no records and the time the client
// must wait, a fetch by a client that still owes bytes of its consumer
// quota; nil when it owes nothing.
func (b *Broker) throttledFetch(req *request) *pending {
	if quotaExempt(req) {
		return nil
	}
	d := b.quotas.Owing(quota.User(req.principal), req.clientID, quota.ConsumerByteRate)
	if d <= 0 {
		return nil
	}
	req.quota.Mute(d)
	b.metrics.throttled("fetch", d)
	resp := kmsg.NewPtrFetchResponse()
	resp.ThrottleMillis = quota.ThrottleMillis(d)
	return ready(encode(req, resp))
}

// countFetch counts a fetch response's bytes against its client's consumer
// quota. When they put the client over it, the response carries the
// throttle and the connection is muted for it.
func (b *Broker) countFetch(req *request, r response) response {
	f, ok := r.(*fetchResponse)
	if !ok || quotaExempt(req) {
		return r
	}
	d := b.quotas.Record(quota.User(req.principal), req.clientID, quota.ConsumerByteRate, f.size)
	if d > 0 {
		req.quota.Mute(d)
		b.metrics.throttled("fetch", d)
		setFetchThrottle(req, f, d)
	}
	return r
}

// setFetchThrottle writes throttle_time_ms into an encoded fetch response:
// the protocol puts it right after the response header (size, correlation
// id, and from v12 the header's tag byte).
func setFetchThrottle(req *request, f *fetchResponse, d time.Duration) {
	at := 8
	if req.GetVersion() >= 12 {
		at++
	}
	binary.BigEndian.PutUint32(f.pieces[0].head[at:], uint32(quota.ThrottleMillis(d)))
}
