package securityapi

// CreateAcls (key 30), versions 1-3.
//
// Served only with the authorizer on (SECURITY_DISABLED otherwise, as in
// Kafka); the caller needs Alter on the cluster. A creation names one
// resource literally or by prefix, a principal User:<name> or User:*, a
// host, an operation other than ANY/UNKNOWN and ALLOW or DENY; anything
// else is INVALID_REQUEST. An ACL already there is not added twice.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(30, 1, 3, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.createACLs) })
}

// securityDisabled is the message of the ACL APIs without an authorizer.
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

func (h *Handlers) createACLs(req *kafkaapi.Request, r *kmsg.CreateACLsRequest) *kmsg.CreateACLsResponse {
	resp := kmsg.NewPtrCreateACLsResponse()
	if !h.authz.MayCluster(req.Who, kmsg.ACLOperationAlter) {
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = acl.ClusterRefused
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	results := make([]kmsg.CreateACLsResponseResult, len(r.Creations))
	var add []acl.ACL
	for i, c := range r.Creations {
		results[i] = kmsg.NewCreateACLsResponseResult()
		if h.authz == nil {
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
		_, err := h.authz.Update(func(acls []acl.ACL) []acl.ACL {
			for _, a := range add {
				if !slices.Contains(acls, a) {
					acls = append(acls, a)
				}
			}
			return acls
		})
		if err != nil {
			h.logger.Error("creating ACLs failed", "err", err)
			msg := err.Error()
			for i := range results {
				if results[i].ErrorCode == 0 {
					results[i].ErrorCode, results[i].ErrorMessage = kerr.UnknownServerError.Code, &msg
				}
			}
		} else {
			h.logger.Info("ACLs created", "count", len(add))
		}
	}
	resp.Results = results
	return resp
}
