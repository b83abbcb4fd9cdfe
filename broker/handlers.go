package broker

// The root's side of the API registry (broker/kafkaapi). Every API is
// served by a handler package, which declares its keys, the versions it
// really implements and its handlers in its Register; New builds the
// broker's registry from the packages' constructors (newAPIs). ApiVersions
// advertises exactly the registry's ranges, the connection layer refuses
// anything outside them before decoding, and handle dispatches through it,
// so adding an API or a version is one edit in that API's file.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/clusterapi"
	"github.com/tributary-io/tributary/broker/configapi"
	"github.com/tributary-io/tributary/broker/groupapi"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/securityapi"
)

// newAPIs builds b's API registry: ApiVersions and the handler packages'
// APIs, each package's handlers built from what they use of b. New calls
// it once the group and transaction coordinators are started.
func (b *Broker) newAPIs() *kafkaapi.Registry {
	r := kafkaapi.NewRegistry()
	r.RegisterAPIVersions()
	b.newSASL().Register(r)
	txnAPIs := b.newTxnAPIs() // transactions.go
	txnAPIs.Register(r)
	groupapi.New(groupapi.Config{
		Groups:            b.groups,
		Authz:             b.authz,
		Topics:            b.meta,
		Closing:           b.closing,
		PendingTxnOffsets: txnAPIs.PendingOffsets,
	}).Register(r)
	securityapi.New(securityapi.Config{
		Authz:       b.authz,
		Credentials: b.cfg.Credentials,
		Quotas:      b.quotas,
		Logger:      b.logger,
	}).Register(r)
	clusterapi.New(clusterapi.Config{Authz: b.authz, Metadata: b.meta, Logger: b.logger}).Register(r)
	configapi.New(configapi.Config{Authz: b.authz, Settings: b.settings}).Register(r)
	b.topics.Register(r)
	b.newDataAPIs().Register(r) // dataapis.go
	return r
}

// handle starts serving one request and returns its pending response. It
// runs on the connection's read goroutine, so whatever must happen in
// request order (appends) happens here; waiting happens in later().
//
// On a SASL listener, a request other than the SASL exchange before
// authentication closes the connection (nil, as Kafka does): the client
// skipped the login, and answering would serve an unknown principal.
func (b *Broker) handle(c *conn, req *request) *pending {
	if !c.Authenticated() && !preAuthAPI(req.Key()) {
		c.logger.Warn("closing connection: request before SASL authentication",
			"api", kmsg.NameForKey(req.Key()), "client_id", req.ClientID, "listener", c.listener.Protocol)
		return nil
	}
	req.Who = acl.Who{Principal: c.Principal(), Host: c.ip} // each handler authorizes (broker/acl's helper)
	a, ok := b.apis.Lookup(req.Key())
	if !ok {
		// decodeRequest only accepts registered keys.
		c.logger.Error("request with no handler", "key", req.Key())
		return ready(nil)
	}
	return a.Serve(c, req)
}
