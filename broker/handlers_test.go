package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/netserver"
)

// registeredKeys returns the registered API keys in order.
func registeredKeys() []int16 { return testAPIs().Keys() }

// TestRegisteredAPIsAreServed: every registered API is answered by its own
// handler at both ends of its version range: the answer decodes as that
// API's response of that version, with the request's correlation id.
func TestRegisteredAPIsAreServed(t *testing.T) {
	b := newInProcessBroker(t)
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("registry-test"))
	for _, key := range b.apis.Keys() {
		a, _ := b.apis.Lookup(key)
		for _, v := range slices.Compact([]int16{a.Min, a.Max}) {
			t.Run(fmt.Sprintf("%s/v%d", kmsg.NameForKey(key), v), func(t *testing.T) {
				kreq := kmsg.RequestForKey(key)
				kreq.SetVersion(v)
				switch r := kreq.(type) {
				case *kmsg.ProduceRequest:
					r.Acks = 1 // acks=0 has no answer to check
				case *kmsg.FetchRequest:
					r.MaxWaitMillis = 0
				}
				const corr = 41
				req, err := decodeRequest(formatter.AppendRequest(nil, kreq, corr)[4:])
				if err != nil {
					t.Fatalf("a registered version does not decode: %v", err)
				}
				resp := kreq.ResponseKind()
				resp.SetVersion(v)
				body := serveAndRead(t, b, req, resp.IsFlexible() && key != apiVersionsKey)
				if err := resp.ReadFrom(body); err != nil {
					t.Fatalf("the answer is not a %s v%d response: %v", kmsg.NameForKey(key), v, err)
				}
			})
		}
	}
}

// newInProcessBroker starts a standalone broker in a temporary directory,
// for tests that call its handlers directly.
func newInProcessBroker(t testing.TB) *Broker {
	t.Helper()
	b, err := New(Config{
		DataDir:          t.TempDir(),
		AutoCreateTopics: true,
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		Groups:           group.Config{InitialRebalanceDelay: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// serveAndRead serves req on a fresh connection of b and returns the
// response body (after the response header).
func serveAndRead(t *testing.T, b *Broker, req *request, flexibleHeader bool) []byte {
	t.Helper()
	server, client := net.Pipe()
	defer client.Close()
	defer server.Close()
	c := testConn(b, server)
	p := b.handle(c, req)
	if p == nil {
		t.Fatal("the connection was closed instead of answered")
	}
	resp, panicked := p.Wait()
	defer p.Discard()
	if panicked != nil {
		t.Fatalf("panicked: %v\n%s", panicked.Value, panicked.Stack)
	}
	if resp == nil {
		t.Fatal("no response: no handler reached")
	}
	return writeAndReadBack(t, resp, server, client, req.CorrelationID, flexibleHeader)
}

// writeAndReadBack writes resp on server, reads its frame on client, checks
// the correlation id and returns the body after the response header
// (whose tagged fields flexibleHeader says are there).
func writeAndReadBack(t *testing.T, resp response, server, client net.Conn, corr int32, flexibleHeader bool) []byte {
	t.Helper()
	written := make(chan error, 1)
	go func() { written <- resp.Send(server) }()
	var size [4]byte
	if _, err := io.ReadFull(client, size[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(client, body); err != nil {
		t.Fatal(err)
	}
	// A refused SASL exchange closes its connection after the answer.
	if err := <-written; err != nil && !errors.Is(err, errClosedAfterResponse) {
		t.Fatalf("writing the response: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	if flexibleHeader {
		var err error
		if body, err = netserver.SkipTags(body); err != nil {
			t.Fatalf("response header: %v", err)
		}
	}
	return body
}

// TestUnregisteredIsUnsupportedVersion: a key that no API file registers,
// and a version just outside a registered range, are refused as
// UNSUPPORTED_VERSION before any handler runs (an ApiVersions probe is then
// answered with our ranges; anything else closes the connection, as Kafka
// does).
func TestUnregisteredIsUnsupportedVersion(t *testing.T) {
	formatter := kmsg.NewRequestFormatter()
	refused := func(key, v int16) {
		t.Helper()
		kreq := kmsg.RequestForKey(key)
		kreq.SetVersion(v)
		_, err := decodeRequest(formatter.AppendRequest(nil, kreq, 1)[4:])
		var unsup *netserver.UnsupportedVersion
		if !errors.As(err, &unsup) || unsup.Key != key || unsup.Version != v {
			t.Errorf("%s v%d: got %v, want UNSUPPORTED_VERSION", kmsg.NameForKey(key), v, err)
		}
	}
	unregistered := 0
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		kreq := kmsg.RequestForKey(key)
		if kreq == nil {
			continue
		}
		a, ok := testAPIs().Lookup(key)
		if !ok {
			unregistered++
			refused(key, kreq.MaxVersion()) // v0 of ControlledShutdown has no client id

			continue
		}
		if a.Min > 0 {
			refused(key, a.Min-1)
		}
		if a.Max < kreq.MaxVersion() {
			refused(key, a.Max+1)
		}
	}
	if unregistered == 0 {
		t.Fatal("every kmsg key is registered: nothing was checked")
	}
}

// TestApiVersionsListsTheRegistry: ApiVersions advertises exactly the
// registered APIs and ranges, in key order: every handler package's.
func TestApiVersionsListsTheRegistry(t *testing.T) {
	b := &Broker{}
	b.apis = b.newAPIs()
	keys := b.apis.APIVersions()
	want := registeredKeys()
	if len(keys) != len(want) || len(want) == 0 {
		t.Fatalf("advertised %d apis, registered %d", len(keys), len(want))
	}
	for i, k := range keys {
		a := apiVersionsOf(want[i])
		if k.ApiKey != want[i] || k.MinVersion != a.Min || k.MaxVersion != a.Max {
			t.Errorf("advertised %s %d..%d, registered key %d %d..%d",
				kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion, want[i], a.Min, a.Max)
		}
	}
}
