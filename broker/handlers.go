package broker

// The API registry: every Kafka API the broker serves is declared once, by
// a register call in its own file (produce.go, fetch.go, ...), with its key,
// the versions it really implements and its handler. ApiVersions advertises
// exactly these ranges, the connection layer refuses anything outside them
// before decoding (served, connections.go), and
// handle dispatches through them, so adding an API or a version is one edit
// in that API's file.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// versions is a range of versions of one API that the broker really
// implements.
type versions struct{ min, max int16 }

// serveFunc starts serving one decoded request of its API and returns its
// pending response (nil closes the connection).
type serveFunc func(b *Broker, c *conn, req *request) *pending

// api is one registered API.
type api struct {
	versions
	serve serveFunc
}

// supported holds the registered APIs by key. It is filled by the init
// functions of the API files and only read afterwards.
var supported = map[int16]api{}

// register declares that the broker serves API key in versions min..max
// with serve. It is called from an init function of the API's file; a key
// registered twice or a range kmsg cannot decode is a programming error.
func register(key, min, max int16, serve serveFunc) {
	if _, dup := supported[key]; dup {
		panic(fmt.Sprintf("api key %d registered twice", key))
	}
	r := kmsg.RequestForKey(key)
	if r == nil || min < 0 || min > max || max > r.MaxVersion() {
		panic(fmt.Sprintf("api key %d: cannot serve versions %d..%d", key, min, max))
	}
	supported[key] = api{versions{min, max}, serve}
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
	a, ok := supported[req.Key()]
	if !ok {
		// decodeRequest only accepts registered keys.
		c.logger.Error("request with no handler", "key", req.Key())
		return ready(nil)
	}
	return a.serve(b, c, req)
}
