// Package testenv starts real services for tests in one line each: a
// Tributary broker in this process or as a separate `tributary` process,
// ZooKeeper, HDFS mini clusters, Apache Kafka's Java tools, Connect and
// Streams. Every service listens on a free loopback port (a port picked
// here lies outside Linux's ephemeral range, where no outgoing connection
// takes it before the service binds it), keeps its files in the test's
// temporary directory and stops at cleanup.
//
// A test that starts anything outside its own process says so first with
// Needs, which skips it under -short (make test-short: unit tests only);
// the starters here declare their own service, so a test that starts one
// through them skips under -short even if it forgets.
package testenv

import (
	"log/slog"
	"net"
	"testing"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
)

// Broker is a broker running inside the test process.
type Broker struct {
	*broker.Broker
	Addr    string
	DataDir string
	ln      net.Listener
	done    chan struct{}
}

type brokerOptions struct {
	dataDir  string
	configFn func(*broker.Config)
	metaFn   func(self cluster.Broker) (cluster.Metadata, error)
	addr     string
}

// BrokerOption changes how StartBroker starts a broker.
type BrokerOption func(*brokerOptions)

// WithDataDir reuses a data directory, to restart a broker on its data.
func WithDataDir(dir string) BrokerOption { return func(o *brokerOptions) { o.dataDir = dir } }

// WithAddr listens on a given address, to restart a broker where clients
// expect it.
func WithAddr(addr string) BrokerOption { return func(o *brokerOptions) { o.addr = addr } }

// WithConfig edits the broker configuration before the broker starts.
func WithConfig(fn func(*broker.Config)) BrokerOption {
	return func(o *brokerOptions) { o.configFn = fn }
}

// WithMetadata makes the broker a cluster member: fn receives the broker's
// own address (known once its listener is open) and returns its cluster
// view, e.g. cluster.JoinZooKeeper.
func WithMetadata(fn func(self cluster.Broker) (cluster.Metadata, error)) BrokerOption {
	return func(o *brokerOptions) { o.metaFn = fn }
}

// StartBroker starts a broker in this process on a free loopback port
// outside the ephemeral range (so WithAddr can restart it there), with
// auto topic creation on and a fast flush interval, and stops it (cleanly)
// at the end of the test.
func StartBroker(t testing.TB, opts ...BrokerOption) *Broker {
	t.Helper()
	var o brokerOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.dataDir == "" {
		o.dataDir = t.TempDir()
	}
	listen := listenFree
	if o.addr != "" {
		listen = func() (net.Listener, error) { return net.Listen("tcp", o.addr) }
	}
	ln, err := listen()
	if err != nil {
		t.Fatalf("broker listener: %v", err)
	}
	cfg := broker.Config{
		DataDir:          o.dataDir,
		AutoCreateTopics: true,
		Logger:           Logger(t, slog.LevelWarn),
	}
	if o.metaFn != nil {
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		p, _ := net.LookupPort("tcp", port)
		meta, err := o.metaFn(cluster.Broker{Host: host, Port: int32(p)})
		if err != nil {
			ln.Close()
			t.Fatalf("joining the cluster: %v", err)
		}
		cfg.Metadata = meta
	}
	if o.configFn != nil {
		o.configFn(&cfg)
	}
	b, err := broker.New(cfg)
	if err != nil {
		ln.Close()
		t.Fatalf("starting broker: %v", err)
	}
	tb := &Broker{Broker: b, Addr: ln.Addr().String(), DataDir: o.dataDir, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(tb.done)
		if err := b.Serve(ln); err != nil {
			t.Errorf("broker serve: %v", err)
		}
	}()
	// Serving before returning: a broker closed before its Serve began
	// would keep its port (a restart on it would fail) and report closed.
	select {
	case <-b.Serving():
	case <-tb.done:
	}
	t.Cleanup(func() { tb.Stop() })
	return tb
}

// Stop shuts the broker down cleanly (as SIGTERM would). Safe to call twice.
func (b *Broker) Stop() {
	b.Close()
	<-b.done
}
