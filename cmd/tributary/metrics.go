package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/metrics"
)

// metricsFlag registers --metrics-listen, the same on every long-running
// command.
func metricsFlag(fs *flag.FlagSet) *string {
	return fs.String("metrics-listen", "", "serve Prometheus metrics on /metrics, liveness on /healthz and readiness on /readyz at `host:port` (e.g. 127.0.0.1:9404); empty serves none")
}

// startMetrics serves a new metrics endpoint on addr. With addr empty it
// returns a server that is never started, so callers register metrics
// unconditionally; stop is always safe to call.
func startMetrics(addr string) (s *metrics.Server, stop func(), err error) {
	s = metrics.New()
	if addr == "" {
		return s, func() {}, nil
	}
	if err := s.Start(addr); err != nil {
		return nil, nil, err
	}
	slog.Info("serving metrics", "addr", s.Addr())
	return s, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			slog.Warn("stopping the metrics endpoint", "err", err)
		}
	}, nil
}

// watchBroker exports b's metrics and makes readiness depend on it.
func watchBroker(s *metrics.Server, b *broker.Broker) {
	s.Registry().MustRegister(b.Metrics())
	s.AddReadyCheck("broker", b.Ready)
}

// zkReady reports whether conn holds a ZooKeeper session.
func zkReady(conn *zk.Conn) func() error {
	return func() error {
		if st := conn.State(); st != zk.StateHasSession {
			return fmt.Errorf("no ZooKeeper session (state %s)", st)
		}
		return nil
	}
}
