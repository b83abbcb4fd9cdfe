package netserver

// Responses as handlers give them: ready at once (Ready), filled later in
// a goroutine of their own (Later) or completed by whatever the handler
// handed them to (Deferred); the connection writes them in request order
// either way (conn_write.go).

import (
	"net"
	"runtime/debug"
	"time"
)

// Pending is one request's response, ready once done is closed.
type Pending struct {
	done chan struct{}
	resp Response // nil: no response (acks=0 produce)

	api      api         // set by the read loop, for the panic log and the observer
	start    time.Time   // when the request was read, for the latency metric
	held     requestHold // the request's share of the budgets, released once written (conn_preauth.go)
	frame    []byte      // a Produce request's frame, pooled again once written (conn_buffers.go)
	panicked *Panic      // the handler panicked: no response, drop the connection
}

// api names the request a response answers: the fields of its header that
// the panic log and the observer read, rather than the decoded request,
// which the response need not keep alive.
type api struct {
	key, version int16
	known        bool // false for the ApiVersions fallback, answered before decoding
	clientID     string
}

func requestAPI(r Request) api {
	return api{key: r.Key(), version: r.GetVersion(), known: true, clientID: r.ClientID}
}

// Panic is a recovered panic with the stack where it happened.
type Panic struct {
	Value any
	Stack []byte
}

// Response is anything that can send itself, with its frame, to a
// connection: an encoded kmsg response or a zero-copy fetch response.
type Response interface {
	Send(nc net.Conn) error
}

// Releaser is a response that holds resources (segment files) until it is
// sent; a response that will never be sent must release them.
type Releaser interface {
	Release()
}

// Ready wraps a response that is complete at once.
func Ready(r Response) *Pending {
	p := &Pending{done: make(chan struct{}), resp: r}
	close(p.done)
	return p
}

// Later returns a pending response completed by fill in its own goroutine.
// A panic in fill is recovered there and reported to the writer, which logs
// it and drops the connection.
func Later(fill func() Response) *Pending {
	p := Deferred()
	go p.Complete(fill)
	return p
}

// Deferred returns a pending response that its handler arranges for
// something else to complete, with Complete, exactly once: for an answer
// that waits on an event a goroutine already watches (an acks=all produce
// is completed by the log flush that covers it), so that no goroutine of
// its own waits per request, as Later's does.
func Deferred() *Pending {
	return &Pending{done: make(chan struct{})}
}

// Complete fills a Deferred response with fill's result and hands it to
// the connection's writer. A panic in fill is recovered here, as Later's
// is, so that it ends the connection and not the goroutine completing.
func (p *Pending) Complete(fill func() Response) {
	defer close(p.done)
	defer func() {
		if v := recover(); v != nil {
			p.resp = nil
			p.panicked = &Panic{Value: v, Stack: debug.Stack()}
		}
	}()
	p.resp = fill()
}

// Wait waits for the response and returns it (nil: none), or the panic of
// the handler that was to fill it.
func (p *Pending) Wait() (Response, *Panic) {
	<-p.done
	return p.resp, p.panicked
}

// Discard releases what a response that will not be sent holds, for
// pendings not served by a connection (tests).
func (p *Pending) Discard() {
	<-p.done
	if r, ok := p.resp.(Releaser); ok {
		r.Release()
	}
}
