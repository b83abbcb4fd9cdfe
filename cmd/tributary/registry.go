package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/tributary-io/tributary/schema/registry"
)

func init() {
	register("schema-registry", "run a Confluent-compatible schema registry whose state is the _schemas topic on the brokers", runSchemaRegistry)
}

func runSchemaRegistry(ctx context.Context, args []string) error {
	fs := newFlags("schema-registry")
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "comma-separated broker addresses holding the _schemas topic")
	listen := fs.String("listen", "127.0.0.1:8081", "HTTP listen address `host:port`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("registry listener: %w", err)
	}
	return serveRegistry(ctx, ln, splitList(*bootstrap))
}

// serveRegistry replays _schemas from the brokers, then answers the REST API
// on ln until ctx ends.
func serveRegistry(ctx context.Context, ln net.Listener, bootstrap []string) error {
	srv, err := registry.New(ctx, registry.Config{Bootstrap: bootstrap, Logger: slog.Default()})
	if err != nil {
		ln.Close()
		if ctx.Err() != nil {
			return nil // interrupted while replaying: a clean stop
		}
		return fmt.Errorf("schema registry: %w", err)
	}
	defer srv.Close()
	fmt.Printf("tributary schema registry: http://%s (state on brokers %v)\n", ln.Addr(), bootstrap)
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("schema registry: %w", err)
	}
	return nil
}
