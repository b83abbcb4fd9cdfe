package broker

import (
	"errors"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecodeRequest drives arbitrary frames through the read path of a real
// in-process broker: decode, handle, encode and write the response. Whatever
// a client sends, the broker must answer or refuse it, never panic, and
// release what the response held. Seeds: every API and version advertised
// in ApiVersions (the supported table), so each handler is reached.
func FuzzDecodeRequest(f *testing.F) {
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for _, key := range testAPIs().Keys() {
		vr := apiVersionsOf(key)
		for v := vr.Min; v <= vr.Max; v++ {
			r := kmsg.RequestForKey(key)
			r.SetVersion(v)
			frame := formatter.AppendRequest(nil, r, 1)[4:] // the read loop strips the size
			if _, err := decodeRequest(frame); err != nil {
				f.Fatalf("seed %s v%d does not decode: %v", kmsg.NameForKey(key), v, err)
			}
			f.Add(frame)
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 8 {
			return // the read loop refuses frames shorter than a header
		}
		req, err := decodeRequest(frame)
		if err != nil {
			return
		}
		if req.Request == nil {
			t.Fatal("no error and no request")
		}
		serveOne(t, req)
	})
}

// serveOne handles req on a fresh broker (so inputs cannot affect each
// other and the data directory stays small) and writes its response to a
// pipe whose other end discards it.
func serveOne(t *testing.T, req *request) {
	b := newInProcessBroker(t)
	if r, ok := req.Request.(*kmsg.FetchRequest); ok {
		r.MaxWaitMillis = 0 // the long poll would only slow the fuzzer down
	}
	server, client := net.Pipe()
	defer client.Close()
	defer server.Close()
	go io.Copy(io.Discard, client)

	c := testConn(b, server)
	p := b.handle(c, req) // not c.Serve: a panic must fail the fuzzer
	resp, panicked := p.Wait()
	if panicked != nil {
		t.Fatalf("%s v%d panicked: %v\n%s", kmsg.NameForKey(req.Key()), req.GetVersion(), panicked.Value, panicked.Stack)
	}
	if resp != nil {
		// A refused SASL exchange closes its connection after the answer.
		if err := resp.Send(server); err != nil && !errors.Is(err, errClosedAfterResponse) {
			t.Fatalf("writing the response: %v", err)
		}
	}
	p.Discard()
}
