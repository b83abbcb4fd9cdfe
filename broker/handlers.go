package broker

// The root's side of the API registry (broker/kafkaapi). Each API file of
// the root declares its key, the versions it really implements and its
// handler once, by a register call in its init; New builds the broker's
// registry from these and from the handler packages' constructors
// (newAPIs). ApiVersions advertises exactly the registry's ranges, the
// connection layer refuses anything outside them before decoding, and
// handle dispatches through it, so adding an API or a version is one edit
// in that API's file.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/clusterapi"
	"github.com/tributary-io/tributary/broker/configapi"
	"github.com/tributary-io/tributary/broker/groupapi"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/securityapi"
)

// serveFunc starts serving one decoded request of its API and returns its
// pending response (nil closes the connection).
type serveFunc func(b *Broker, c *conn, req *request) *pending

// rootAPI is an API served by a file of the root.
type rootAPI struct {
	key, min, max int16
	serve         serveFunc
}

// rootAPIs are the root's APIs, declared by the init functions of their
// files and only read afterwards.
var rootAPIs []rootAPI

// register declares that the root serves API key in versions min..max
// with serve. It is called from an init function of the API's file; New
// puts it in the broker's registry, which refuses a key registered twice
// or a range kmsg cannot decode.
func register(key, min, max int16, serve serveFunc) {
	rootAPIs = append(rootAPIs, rootAPI{key, min, max, serve})
}

// newAPIs builds b's API registry: the root's APIs and the handler
// packages', each package's handlers built from what they use of b. New
// calls it once the group coordinator is started.
func (b *Broker) newAPIs() *kafkaapi.Registry {
	r := kafkaapi.NewRegistry()
	r.RegisterAPIVersions()
	b.newSASL().Register(r)
	for _, a := range rootAPIs {
		serve := a.serve
		r.Register(a.key, a.min, a.max, func(c kafkaapi.Conn, in kafkaapi.Incoming) *pending {
			return serve(b, c.(*conn), in.(*request))
		})
	}
	groupapi.New(groupapi.Config{
		Groups:            b.groups,
		Authz:             b.authz,
		Topics:            b.meta,
		Closing:           b.closing,
		PendingTxnOffsets: b.pendingTxnOffsets,
	}).Register(r)
	securityapi.New(securityapi.Config{
		Authz:       b.authz,
		Credentials: b.cfg.Credentials,
		Quotas:      b.quotas,
		Logger:      b.logger,
	}).Register(r)
	clusterapi.New(clusterapi.Config{Authz: b.authz, Metadata: b.meta, Logger: b.logger}).Register(r)
	b.txnAPIs = b.newTxnAPIs()
	b.txnAPIs.Register(r)
	configapi.New(configapi.Config{Authz: b.authz, Settings: b.settings}).Register(r)
	b.topics.Register(r)
	return r
}

// now adapts a handler that answers at once, on the connection's read
// goroutine: what must happen in request order happens there.
func now[Q kmsg.Request, P kmsg.Response](h func(*Broker, *request, Q) P) serveFunc {
	return func(b *Broker, _ *conn, req *request) *pending {
		return ready(encode(req, h(b, req, req.Request.(Q))))
	}
}

// async adapts a handler that may wait (disk, ZooKeeper, other brokers): it
// runs in its own goroutine, so the connection keeps reading, and its
// answer still goes out in request order.
func async[Q kmsg.Request, P kmsg.Response](h func(*Broker, *request, Q) P) serveFunc {
	return func(b *Broker, _ *conn, req *request) *pending {
		r := req.Request.(Q)
		return later(func() response { return encode(req, h(b, req, r)) })
	}
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
			"api", kmsg.NameForKey(req.Key()), "client_id", req.clientID, "listener", c.listener.Protocol)
		return nil
	}
	req.principal, req.host = c.Principal(), c.ip // each handler authorizes (authorize.go)
	a, ok := b.apis.Lookup(req.Key())
	if !ok {
		// decodeRequest only accepts registered keys.
		c.logger.Error("request with no handler", "key", req.Key())
		return ready(nil)
	}
	return a.Serve(c, req)
}
