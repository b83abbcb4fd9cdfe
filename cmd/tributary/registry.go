package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/metrics"
	"github.com/tributary-io/tributary/schema/registry"
)

func init() {
	register("schema-registry", "run a Confluent-compatible schema registry whose state is the _schemas topic on the brokers", runSchemaRegistry)
}

func runSchemaRegistry(ctx context.Context, args []string) error {
	fs := newFlags("schema-registry")
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "comma-separated broker addresses holding the _schemas topic")
	listen := fs.String("listen", "127.0.0.1:8081", "HTTP listen address `host:port`")
	var rf registryFlags
	rf.register(fs)
	metricsListen := metricsFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("registry listener: %w", err)
	}
	ms, stopMetrics, err := startMetrics(*metricsListen)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopMetrics()
	return serveRegistry(ctx, ln, splitList(*bootstrap), rf, nil, ms)
}

// registryFlags are the registry's limits, shared by schema-registry and
// standalone.
type registryFlags struct {
	maxSchemaBytes, maxSchemaDepth int
}

func (f *registryFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.maxSchemaBytes, "schema-max-bytes", registry.DefaultMaxSchemaBytes, "largest schema text the registry parses; larger ones get 42201")
	fs.IntVar(&f.maxSchemaDepth, "schema-max-depth", registry.DefaultMaxSchemaDepth, "deepest nesting of JSON objects and arrays in a schema the registry parses; deeper ones get 42201")
}

// serveRegistry answers the REST API on ln until ctx ends. It serves at
// once: 503 with the reason until _schemas is replayed, and for as long as
// it cannot be (wrong partition count, brokers down), so the process —
// in standalone, the broker — stays up. b, when set, is the broker of this
// process, which the registry writes through directly. ms is where its
// metrics and readiness go.
func serveRegistry(ctx context.Context, ln net.Listener, bootstrap []string, rf registryFlags, b *broker.Broker, ms *metrics.Server) error {
	kcfg := registry.KafkaLogConfig{Bootstrap: bootstrap, Logger: slog.Default()}
	if b != nil {
		kcfg.Append = func(ctx context.Context, recs []registry.Record) (int64, error) {
			irs := make([]broker.InternalRecord, len(recs))
			for i, r := range recs {
				irs[i] = broker.InternalRecord{Key: r.Key, Value: r.Value}
			}
			return b.AppendInternal(ctx, registry.DefaultTopic, 0, irs)
		}
	}
	node, err := registry.Start(registry.Config{Logger: slog.Default(), MaxSchemaBytes: rf.maxSchemaBytes, MaxSchemaDepth: rf.maxSchemaDepth},
		func(ctx context.Context) (registry.Log, error) { return registry.OpenKafkaLog(ctx, kcfg) })
	if err != nil {
		ln.Close()
		return fmt.Errorf("schema registry: %w", err)
	}
	defer node.Close()
	fmt.Printf("tributary schema registry: http://%s (state on brokers %v)\n", ln.Addr(), bootstrap)
	ms.AddReadyCheck("registry", node.Ready)
	if err := node.ServeWithMetrics(ctx, ln, ms.Registry()); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("schema registry: %w", err)
	}
	return nil
}
