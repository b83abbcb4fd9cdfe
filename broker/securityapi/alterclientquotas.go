package securityapi

// AlterClientQuotas (key 49), versions 0-1.
//
// Sets or removes quotas per entity; the caller needs AlterConfigs on the
// cluster, as in Kafka. Only producer_byte_rate and consumer_byte_rate are
// served, for the entity types user and client-id; another key or type
// (request_percentage, controller_mutation_rate, ip) is refused with
// INVALID_REQUEST naming it, rather than stored and silently not enforced.
// A rate must be a whole number of bytes per second, at least 1. Each
// entity is answered on its own; ValidateOnly checks without storing.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/quota"
)

func init() {
	add(49, 0, 1, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.alterClientQuotas) })
}

func (h *Handlers) alterClientQuotas(req *kafkaapi.Request, r *kmsg.AlterClientQuotasRequest) *kmsg.AlterClientQuotasResponse {
	resp := kmsg.NewPtrAlterClientQuotasResponse()
	allowed := h.authz.MayCluster(req.Who, kmsg.ACLOperationAlterConfigs)
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
			t, err := h.quotas.Alter(e, entry.Ops)
			if err != nil {
				fail(kerr.UnknownServerError.Code, err.Error())
				h.logger.Error("altering client quotas failed", "entity", quota.EntityString(comps), "err", err)
				break
			}
			h.logger.Info("client quotas altered", "entity", quota.EntityString(comps), "quotas", t[e])
		}
		resp.Entries = append(resp.Entries, res)
	}
	return resp
}
