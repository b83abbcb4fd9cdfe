package securityapi

// DeleteAcls (key 31), versions 1-3.
//
// Deletes every ACL matching one of the request's filters and answers, per
// filter, the ACLs it matched; the caller needs Alter on the cluster.
// SECURITY_DISABLED without an authorizer.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(31, 1, 3, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.deleteACLs) })
}

func (h *Handlers) deleteACLs(req *kafkaapi.Request, r *kmsg.DeleteACLsRequest) *kmsg.DeleteACLsResponse {
	resp := kmsg.NewPtrDeleteACLsResponse()
	if !h.authz.MayCluster(req.Who, kmsg.ACLOperationAlter) {
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = acl.ClusterRefused
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(r.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	if h.authz == nil {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.SecurityDisabled.Code, securityDisabled()
		}
		return resp
	}
	_, err := h.authz.Update(func(acls []acl.ACL) []acl.ACL {
		for i := range resp.Results { // a retried update starts over
			resp.Results[i].MatchingACLs = nil
		}
		kept := acls[:0:0]
		for _, a := range acls {
			deleted := false
			for i, f := range r.Filters {
				if !acl.FilterMatches(a, f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType) {
					continue
				}
				deleted = true
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = a.ResourceType, a.ResourceName, a.PatternType
				m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, a.Operation, a.Permission
				resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			}
			if !deleted {
				kept = append(kept, a)
			}
		}
		return kept
	})
	if err != nil {
		h.logger.Error("deleting ACLs failed", "err", err)
		msg := err.Error()
		for i := range resp.Results {
			resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.UnknownServerError.Code, &msg
		}
	}
	return resp
}
