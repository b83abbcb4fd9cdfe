package broker

// DescribeAcls, CreateAcls and DeleteAcls.
//
// Served only with the authorizer on (SECURITY_DISABLED otherwise, as in
// Kafka); who may call them is itself an ACL question (Describe or Alter on
// the cluster). A creation names one resource literally or
// by prefix, a principal User:<name> or User:*, a host, an operation other
// than ANY/UNKNOWN and ALLOW or DENY; anything else is INVALID_REQUEST.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
)

func init() {
	register(29, 1, 3, now((*Broker).describeACLs))
	register(30, 1, 3, now((*Broker).createACLs))
	register(31, 1, 3, now((*Broker).deleteACLs))
}

func securityDisabled() *string {
	msg := "no authorizer is configured on the broker: start it with --authorizer"
	return &msg
}

func validACL(a acl.ACL) error {
	switch {
	case a.ResourceType < kmsg.ACLResourceTypeTopic || a.ResourceType > kmsg.ACLResourceTypeDelegationToken:
		return fmt.Errorf("resource type %v cannot be named in an ACL", a.ResourceType)
	case a.PatternType != kmsg.ACLResourcePatternTypeLiteral && a.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("pattern type %v: use LITERAL or PREFIXED", a.PatternType)
	case a.ResourceName == "":
		return fmt.Errorf("empty resource name")
	case !strings.HasPrefix(a.Principal, "User:") || len(a.Principal) == len("User:"):
		return fmt.Errorf("principal %q: use User:<name> or User:*", a.Principal)
	case a.Host == "":
		return fmt.Errorf("empty host: use * for any")
	case a.Operation < kmsg.ACLOperationAll || a.Operation > kmsg.ACLOperationDescribeTokens:
		return fmt.Errorf("operation %v cannot be named in an ACL", a.Operation)
	case a.Permission != kmsg.ACLPermissionTypeAllow && a.Permission != kmsg.ACLPermissionTypeDeny:
		return fmt.Errorf("permission %v: use ALLOW or DENY", a.Permission)
	}
	return nil
}

func (b *Broker) createACLs(req *request, r *kmsg.CreateACLsRequest) *kmsg.CreateACLsResponse {
	resp := kmsg.NewPtrCreateACLsResponse()
	if !b.mayCluster(req, kmsg.ACLOperationAlter) {
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = clusterRefused
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	results := make([]kmsg.CreateACLsResponseResult, len(r.Creations))
	var add []acl.ACL
	for i, c := range r.Creations {
		results[i] = kmsg.NewCreateACLsResponseResult()
		if b.authz == nil {
			results[i].ErrorCode, results[i].ErrorMessage = kerr.SecurityDisabled.Code, securityDisabled()
			continue
		}
		a := acl.ACL{Principal: c.Principal, Host: c.Host, ResourceType: c.ResourceType, ResourceName: c.ResourceName,
			PatternType: c.ResourcePatternType, Operation: c.Operation, Permission: c.PermissionType}
		if err := validACL(a); err != nil {
			msg := err.Error()
			results[i].ErrorCode, results[i].ErrorMessage = kerr.InvalidRequest.Code, &msg
			continue
		}
		add = append(add, a)
	}
	if len(add) > 0 {
		_, err := b.authz.Update(func(acls []acl.ACL) []acl.ACL {
			for _, a := range add {
				if !slices.Contains(acls, a) {
					acls = append(acls, a)
				}
			}
			return acls
		})
		if err != nil {
			b.logger.Error("creating ACLs failed", "err", err)
			msg := err.Error()
			for i := range results {
				if results[i].ErrorCode == 0 {
					results[i].ErrorCode, results[i].ErrorMessage = kerr.UnknownServerError.Code, &msg
				}
			}
		} else {
			b.logger.Info("ACLs created", "count", len(add))
		}
	}
	resp.Results = results
	return resp
}

func (b *Broker) describeACLs(req *request, r *kmsg.DescribeACLsRequest) *kmsg.DescribeACLsResponse {
	resp := kmsg.NewPtrDescribeACLsResponse()
	if !b.mayCluster(req, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = clusterRefused
		return resp
	}
	if b.authz == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, securityDisabled()
		return resp
	}
	type key struct {
		typ     kmsg.ACLResourceType
		name    string
		pattern kmsg.ACLResourcePatternType
	}
	index := map[key]int{}
	for _, a := range b.authz.ACLs() {
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

func (b *Broker) deleteACLs(req *request, r *kmsg.DeleteACLsRequest) *kmsg.DeleteACLsResponse {
	resp := kmsg.NewPtrDeleteACLsResponse()
	if !b.mayCluster(req, kmsg.ACLOperationAlter) {
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = clusterRefused
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(r.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	if b.authz == nil {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.SecurityDisabled.Code, securityDisabled()
		}
		return resp
	}
	_, err := b.authz.Update(func(acls []acl.ACL) []acl.ACL {
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
		b.logger.Error("deleting ACLs failed", "err", err)
		msg := err.Error()
		for i := range resp.Results {
			resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.UnknownServerError.Code, &msg
		}
	}
	return resp
}
