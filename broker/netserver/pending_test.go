package netserver_test

import (
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/netserver"
)

// TestDeferredResponsesCompletedElsewhereKeepOrder: responses completed
// by another goroutine (as a log flush completes acks=all answers) leave
// in request order whatever order they are completed in, and waiting
// costs no goroutine per response.
func TestDeferredResponsesCompletedElsewhereKeepOrder(t *testing.T) {
	const n = 10
	h := &handler{deferred: make(chan deferredReq, n)}
	_, addr := start(t, netserver.Plaintext, h)
	c := dial(t, addr)
	send(t, c, "t", 1, metadata())
	reqs := []deferredReq{<-h.deferred}
	before := runtime.NumGoroutine() // the connection's own are running
	for corr := int32(2); corr <= n; corr++ {
		send(t, c, "t", corr, metadata())
		reqs = append(reqs, <-h.deferred)
	}
	if now := runtime.NumGoroutine(); now > before+1 {
		t.Errorf("goroutines went from %d to %d for %d more deferred responses", before, now, n-1)
	}
	for _, i := range []int{9, 2, 0, 5, 1, 3, 4, 8, 6, 7} {
		r := reqs[i]
		r.p.Complete(func() netserver.Response {
			return netserver.Encode(r.corr, r.version, kmsg.NewPtrMetadataResponse())
		})
	}
	for want := int32(1); want <= n; want++ {
		if got, err := correlation(c); err != nil || got != want {
			t.Fatalf("response %d, %v; want %d", got, err, want)
		}
	}
}

// TestDeferredPanicEndsTheConnectionNotTheCompleter: a panic while
// completing is the connection's, as a Later handler's is: the goroutine
// that completes (a log's flush) goes on, the client loses the connection.
func TestDeferredPanicEndsTheConnectionNotTheCompleter(t *testing.T) {
	h := &handler{deferred: make(chan deferredReq, 1)}
	_, addr := start(t, netserver.Plaintext, h)
	c := dial(t, addr)
	send(t, c, "t", 1, metadata())
	r := <-h.deferred
	r.p.Complete(func() netserver.Response { panic("test: completing panics") })
	if got, err := correlation(c); err == nil {
		t.Fatalf("got response %d after the panic, want the connection closed", got)
	}
}
