// Package audittest starts what audit tests need in one line: a broker
// and a schema registry that keeps its state on that broker's _schemas
// topic, as in production.
package audittest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema/registry"
)

// Env is a running broker with a schema registry.
type Env struct {
	Broker      *testenv.Broker
	RegistryURL string
	Registry    *sr.Client
}

// Start runs a broker and a registry for the duration of t. It skips the
// test under -short, which runs unit tests only.
func Start(t testing.TB) *Env {
	t.Helper()
	NeedServices(t)
	b := testenv.StartBroker(t)
	url, cl := StartRegistry(t, b.Addr)
	return &Env{Broker: b, RegistryURL: url, Registry: cl}
}

// StartRegistry runs a registry node on the _schemas topic of the broker
// at addr, behind a real HTTP listener.
func StartRegistry(t testing.TB, addr string) (string, *sr.Client) {
	t.Helper()
	srv, err := registry.New(context.Background(), registry.Config{Bootstrap: []string{addr}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("start schema registry on %s: %v", addr, err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	cl, err := sr.NewClient(sr.URLs(hs.URL))
	if err != nil {
		t.Fatal(err)
	}
	return hs.URL, cl
}

// Client returns a kgo client of the broker at addr that creates the
// topics it produces to, closed with t.
func Client(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// NeedServices skips a test that starts real services (or a browser)
// under -short.
func NeedServices(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts brokers, processes or a browser; skipped with -short")
	}
}
