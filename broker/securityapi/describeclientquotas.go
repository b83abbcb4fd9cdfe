package securityapi

// DescribeClientQuotas (key 48), versions 0-1.
//
// The quotas of the entities matching the request's components (broker/quota
// has the model and the matching); the caller needs DescribeConfigs on the
// cluster, as in Kafka. Only the entity types user and client-id are
// served: another (ip) is refused with INVALID_REQUEST naming it, as is a
// type filtered twice or an unknown match type.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/quota"
)

func init() {
	add(48, 0, 1, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.describeClientQuotas) })
}

func (h *Handlers) describeClientQuotas(req *kafkaapi.Request, r *kmsg.DescribeClientQuotasRequest) *kmsg.DescribeClientQuotasResponse {
	resp := kmsg.NewPtrDescribeClientQuotasResponse()
	fail := func(code int16, msg string) *kmsg.DescribeClientQuotasResponse {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp
	}
	if !h.authz.MayCluster(req.Who, kmsg.ACLOperationDescribeConfigs) {
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
	t := h.quotas.Table()
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
