package broker

// ACLs, Kafka's model: an ACL allows or denies a principal, from a host,
// an operation on a resource (topic, group, cluster, transactional id)
// named literally or by prefix. With Config.Authorizer on, every request
// is checked as Kafka checks it (acl_enforce.go): a deny that matches wins
// over any allow, an allow must match, and nothing matching means deny.
// Super users pass every check. Allowing Read, Write, Delete or Alter
// implies Describe, and AlterConfigs implies DescribeConfigs, as in Kafka.
//
// The ACLs are kept in memory and persisted in the data directory
// (standalone) or ZooKeeper (acl_store.go); a change applies to the next
// request.

import (
	"slices"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL is one access rule.
type ACL struct {
	Principal    string                      `json:"principal"` // User:<name> or User:*
	Host         string                      `json:"host"`      // an IP or *
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	ResourceName string                      `json:"resource_name"`
	PatternType  kmsg.ACLResourcePatternType `json:"pattern_type"` // literal or prefixed
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
}

// authorizer decides requests from the current ACLs.
type authorizer struct {
	superUsers []string
	store      aclStore
	acls       atomic.Pointer[[]ACL]
}

// newAuthorizer loads the ACLs of the store.
func newAuthorizer(store aclStore, superUsers []string) (*authorizer, error) {
	z := &authorizer{superUsers: superUsers, store: store}
	if err := z.refresh(); err != nil {
		return nil, err
	}
	return z, nil
}

// refresh reads the stored ACLs again (another broker changed them).
func (z *authorizer) refresh() error {
	acls, err := z.store.load()
	if err != nil {
		return err
	}
	z.acls.Store(&acls)
	return nil
}

// update changes the stored ACLs and applies the result at once.
func (z *authorizer) update(fn func([]ACL) []ACL) ([]ACL, error) {
	acls, err := z.store.update(fn)
	if err != nil {
		return nil, err
	}
	z.acls.Store(&acls)
	return acls, nil
}

// resourceMatches reports whether the ACL's resource pattern covers name.
func (a ACL) resourceMatches(typ kmsg.ACLResourceType, name string) bool {
	if a.ResourceType != typ {
		return false
	}
	switch a.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return a.ResourceName == name || a.ResourceName == "*"
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, a.ResourceName)
	}
	return false
}

func (a ACL) principalMatches(principal string) bool {
	return a.Principal == principal || a.Principal == "User:*"
}

func (a ACL) hostMatches(host string) bool { return a.Host == "*" || a.Host == host }

// impliedBy lists the operations whose allowance also allows the key.
var impliedBy = map[kmsg.ACLOperation][]kmsg.ACLOperation{
	kmsg.ACLOperationDescribe: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter},
	kmsg.ACLOperationDescribeConfigs: {kmsg.ACLOperationAlterConfigs},
}

// allowed decides one operation of principal, connected from host, on a
// resource.
func (z *authorizer) allowed(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if principal == InternalPrincipal {
		return internalAllowed(typ, name) // internal_conn.go
	}
	if slices.Contains(z.superUsers, principal) {
		return true
	}
	acls := *z.acls.Load()
	allow := false
	for _, a := range acls {
		if !a.principalMatches(principal) || !a.hostMatches(host) || !a.resourceMatches(typ, name) {
			continue
		}
		switch a.Permission {
		case kmsg.ACLPermissionTypeDeny:
			if a.Operation == op || a.Operation == kmsg.ACLOperationAll {
				return false
			}
		case kmsg.ACLPermissionTypeAllow:
			if a.Operation == op || a.Operation == kmsg.ACLOperationAll || slices.Contains(impliedBy[op], a.Operation) {
				allow = true
			}
		}
	}
	return allow
}

// filterMatches reports whether an ACL matches a DescribeAcls or
// DeleteAcls filter: ANY matches everything of its field, MATCH a
// pattern type matches every pattern that could cover the name.
func filterMatches(a ACL, typ kmsg.ACLResourceType, name *string, pattern kmsg.ACLResourcePatternType,
	principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) bool {
	if typ != kmsg.ACLResourceTypeAny && typ != a.ResourceType {
		return false
	}
	switch pattern {
	case kmsg.ACLResourcePatternTypeAny:
		if name != nil && *name != a.ResourceName {
			return false
		}
	case kmsg.ACLResourcePatternTypeMatch:
		if name != nil && !a.resourceMatches(a.ResourceType, *name) {
			return false
		}
	default:
		if pattern != a.PatternType || (name != nil && *name != a.ResourceName) {
			return false
		}
	}
	if principal != nil && *principal != a.Principal {
		return false
	}
	if host != nil && *host != a.Host {
		return false
	}
	if op != kmsg.ACLOperationAny && op != a.Operation {
		return false
	}
	return perm == kmsg.ACLPermissionTypeAny || perm == a.Permission
}
