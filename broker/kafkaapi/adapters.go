package kafkaapi

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/netserver"
)

// Now adapts a handler that answers at once, on the connection's read
// goroutine: what must happen in request order happens there.
func Now[Q kmsg.Request, P kmsg.Response](h func(*Request, Q) P) Serve {
	return func(_ Conn, req *Request) *netserver.Pending {
		return Ready(req, h(req, req.Request.(Q)))
	}
}

// Async adapts a handler that may wait (disk, ZooKeeper, other brokers): it
// runs in its own goroutine, so the connection keeps reading, and its
// answer still goes out in request order.
func Async[Q kmsg.Request, P kmsg.Response](h func(*Request, Q) P) Serve {
	return func(_ Conn, req *Request) *netserver.Pending {
		r := req.Request.(Q)
		return netserver.Later(func() netserver.Response { return Encode(req, h(req, r)) })
	}
}

// Start adapts a handler that decides itself what it answers at once and
// what later (Ready, Later), and may read its connection (a member's
// address, the listener it answers for).
func Start[Q kmsg.Request](h func(Conn, *Request, Q) *Pending) Serve {
	return func(c Conn, req *Request) *netserver.Pending {
		return h(c, req, req.Request.(Q))
	}
}

// Encode frames resp as the answer to req.
func Encode(req *Request, resp kmsg.Response) netserver.Encoded {
	return netserver.Encode(req.CorrelationID, req.GetVersion(), resp)
}

// Ready is resp, complete at once, as the answer to req.
func Ready(req *Request, resp kmsg.Response) *netserver.Pending {
	return netserver.Ready(Encode(req, resp))
}

// Later is the answer to req that fill computes in its own goroutine; the
// connection keeps reading meanwhile, and the answer goes out in request
// order.
func Later(req *Request, fill func() kmsg.Response) *netserver.Pending {
	return netserver.Later(func() netserver.Response { return Encode(req, fill()) })
}

// Pending is a response that may still be computed (netserver's).
type Pending = netserver.Pending
