// Package srtest starts a schema registry for tests in one line: our
// registry server over an in-memory log, behind a real HTTP listener, with
// a pkg/sr client pointed at it.
package srtest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/tributary-io/tributary/schema/registry"
	"github.com/twmb/franz-go/pkg/sr"
)

// Registry is a running test registry.
type Registry struct {
	URL    string
	Client *sr.Client
	Server *registry.Server
	Log    *registry.MemoryLog
}

// Start runs a registry node for the duration of t.
func Start(t testing.TB) *Registry {
	t.Helper()
	return StartOn(t, registry.NewMemoryLog())
}

// StartOn runs a registry node reading log, which other nodes may share.
func StartOn(t testing.TB, log *registry.MemoryLog) *Registry {
	t.Helper()
	srv, err := registry.NewWithLog(context.Background(), log.Open(), registry.Config{Logger: Quiet()})
	if err != nil {
		t.Fatalf("start registry: %v", err)
	}
	r := Serve(t, srv)
	r.Log = log
	return r
}

// Quiet is a logger that drops everything, for tests that expect skipped
// records and would otherwise fill the output.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Serve puts an HTTP listener and a client in front of a running node and
// closes both, and the node, when t ends.
func Serve(t testing.TB, srv *registry.Server) *Registry {
	t.Helper()
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	cl, err := sr.NewClient(sr.URLs(hs.URL))
	if err != nil {
		t.Fatalf("registry client: %v", err)
	}
	return &Registry{URL: hs.URL, Client: cl, Server: srv}
}
