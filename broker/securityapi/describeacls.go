package securityapi

// DescribeAcls (key 29), versions 1-3.
//
// The ACLs matching the request's filter, grouped by resource; the caller
// needs Describe on the cluster. SECURITY_DISABLED without an authorizer.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(29, 1, 3, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.describeACLs) })
}

func (h *Handlers) describeACLs(req *kafkaapi.Request, r *kmsg.DescribeACLsRequest) *kmsg.DescribeACLsResponse {
	resp := kmsg.NewPtrDescribeACLsResponse()
	if !h.authz.MayCluster(req.Who, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = acl.ClusterRefused
		return resp
	}
	if h.authz == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, securityDisabled()
		return resp
	}
	type key struct {
		typ     kmsg.ACLResourceType
		name    string
		pattern kmsg.ACLResourcePatternType
	}
	index := map[key]int{}
	for _, a := range h.authz.ACLs() {
		if !acl.FilterMatches(a, r.ResourceType, r.ResourceName, r.ResourcePatternType, r.Principal, r.Host, r.Operation, r.PermissionType) {
			continue
		}
		k := key{a.ResourceType, a.ResourceName, a.PatternType}
		i, ok := index[k]
		if !ok {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = k.typ, k.name, k.pattern
			resp.Resources = append(resp.Resources, res)
			i = len(resp.Resources) - 1
			index[k] = i
		}
		d := kmsg.NewDescribeACLsResponseResourceACL()
		d.Principal, d.Host, d.Operation, d.PermissionType = a.Principal, a.Host, a.Operation, a.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, d)
	}
	return resp
}
