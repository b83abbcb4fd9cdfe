// Package acl decides requests by ACLs, Kafka's model: an ACL allows or denies a principal, from a host,
// an operation on a resource (topic, group, cluster, transactional id)
// named literally or by prefix. With Config.Authorizer on, every request
// is checked as Kafka checks it (each handler asks the helper, helper.go,
// with its client's Who): a deny that matches wins
// over any allow, an allow must match, and nothing matching means deny.
// Super users pass every check. Allowing Read, Write, Delete or Alter
// implies Describe, and AlterConfigs implies DescribeConfigs, as in Kafka.
//
// The ACLs are kept in memory and persisted in the data directory
// (standalone) or ZooKeeper (store.go); a change applies to the next
// request.
package acl

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

// InternalPrincipal is the principal of the broker's in-process
// connections (broker/internal_conn.go). It is not a User: no login,
// certificate or ACL can name it, and the Authorizer allows it only what
// its internal rule allows.
const InternalPrincipal = "Internal:tributary"

// Authorizer decides requests from the current ACLs.
type Authorizer struct {
	superUsers []string
	internal   func(kmsg.ACLResourceType, string) bool
	store      Store
	acls       atomic.Pointer[[]ACL]
}

// New loads the ACLs of the store. internal decides for InternalPrincipal.
func New(store Store, superUsers []string, internal func(typ kmsg.ACLResourceType, name string) bool) (*Authorizer, error) {
	z := &Authorizer{superUsers: superUsers, store: store, internal: internal}
	if err := z.Refresh(); err != nil {
		return nil, err
	}
	return z, nil
}

// Refresh reads the stored ACLs again (another broker changed them).
func (z *Authorizer) Refresh() error {
	acls, err := z.store.load()
	if err != nil {
		return err
	}
	z.acls.Store(&acls)
	return nil
}

// Update changes the stored ACLs and applies the result at once.
func (z *Authorizer) Update(fn func([]ACL) []ACL) ([]ACL, error) {
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

// Allowed decides one operation of principal, connected from host, on a
// resource.
func (z *Authorizer) Allowed(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if principal == InternalPrincipal {
		return z.internal(typ, name)
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

// FilterMatches reports whether an ACL matches a DescribeAcls or
// DeleteAcls filter: ANY matches everything of its field, MATCH a
// pattern type matches every pattern that could cover the name.
func FilterMatches(a ACL, typ kmsg.ACLResourceType, name *string, pattern kmsg.ACLResourcePatternType,
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

// ACLs returns the ACLs in force; the caller must not change them.
func (z *Authorizer) ACLs() []ACL { return *z.acls.Load() }

// MayWriteSomeTopic reports whether an ACL allows principal, connected
// from host, to write some topic: enough for an idempotent producer id, as
// in Kafka 3.x.
func (z *Authorizer) MayWriteSomeTopic(principal, host string) bool {
	if principal == InternalPrincipal {
		return true // it writes the internal topics
	}
	for _, a := range z.ACLs() {
		if a.ResourceType == kmsg.ACLResourceTypeTopic && a.Permission == kmsg.ACLPermissionTypeAllow &&
			(a.Operation == kmsg.ACLOperationWrite || a.Operation == kmsg.ACLOperationAll) &&
			a.principalMatches(principal) && a.hostMatches(host) {
			return true
		}
	}
	return false
}
