// Package securityapi serves the APIs that change who may do what: the
// ACLs (CreateAcls, DescribeAcls, DeleteAcls), the SCRAM users
// (DescribeUserScramCredentials, AlterUserScramCredentials) and the client
// quotas (DescribeClientQuotas, AlterClientQuotas), over broker/acl's
// authorizer, broker/auth's credential store and broker/quota's manager.
//
// One file per API holds its versions, its handler and its ACL rule: each
// asks for Describe (DescribeConfigs for quotas) on the cluster to read and
// Alter (AlterConfigs for quotas) to change. What an ACL, a credential or a
// quota means, where they are stored and how a change reaches the other
// brokers are those packages'; a handler checks the request, asks its
// store and turns the answer into its version's response.
//
// The broker builds Handlers with New from what they use and adds them to
// its registry with Register; nothing here imports the root broker.
package securityapi

import (
	"log/slog"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/quota"
)

// Config is what the security APIs use from the broker.
type Config struct {
	// Authz decides each request (broker/acl's helper) and holds the
	// ACLs; nil allows everything and serves no ACL API
	// (SECURITY_DISABLED).
	Authz *acl.Authorizer
	// Credentials holds the SCRAM users.
	Credentials auth.CredentialStore
	// Quotas holds the client quotas.
	Quotas *quota.Manager
	// Logger records each change and each failed one.
	Logger *slog.Logger
}

// Handlers serves the security APIs of one broker.
type Handlers struct {
	authz  *acl.Authorizer
	creds  auth.CredentialStore
	quotas *quota.Manager
	logger *slog.Logger
}

// New returns the security APIs over cfg. It only keeps cfg: the broker
// may build them before it serves.
func New(cfg Config) *Handlers {
	return &Handlers{authz: cfg.Authz, creds: cfg.Credentials, quotas: cfg.Quotas, logger: cfg.Logger}
}

// apis are this package's APIs, each declared in its file's init.
var apis kafkaapi.APIs[*Handlers]

// add declares, from an API file's init, that h serves key in versions
// min..max with serve(h).
func add(key, min, max int16, serve func(*Handlers) kafkaapi.Serve) { apis.Add(key, min, max, serve) }

// Register adds every security API to r.
func (h *Handlers) Register(r *kafkaapi.Registry) {
	apis.Register(r, h)
}
