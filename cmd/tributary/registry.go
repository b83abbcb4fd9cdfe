package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/clientsec"
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
	fs.StringVar(&rf.checkpoint, "registry-checkpoint", "", "`file` where this node keeps the highest schema id handed out and which _schemas it read, so that ids are never reused if _schemas is deleted or rewound (standalone: <data-dir>/"+registryCheckpointFile+"); one file per node")
	credDir := fs.String("credentials-data-dir", "", "with --registry-auth basic: check passwords against the users of the standalone broker with this data directory (`tributary users set`)")
	credZK := fs.String("credentials-zookeeper", "", "with --registry-auth basic: check passwords against a cluster's users, ZooKeeper `host:port/chroot` /config/users")
	var ksec clientsec.Kafka
	ksec.Register(fs, "") // how the registry's own client reaches the brokers
	metricsListen := metricsFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if rf.kafkaOpts, err = ksec.Opts(); err != nil {
		return err
	}
	switch {
	case *credDir != "" && *credZK != "":
		return errors.New("--credentials-data-dir and --credentials-zookeeper: give one")
	case *credDir != "":
		rf.credentials = broker.OpenCredentialFile(broker.CredentialFilePath(*credDir))
	case *credZK != "":
		zk, err := cluster.DialZooKeeper(ctx, *credZK, slog.Default())
		if err != nil {
			return fmt.Errorf("--credentials-zookeeper %s: %w", *credZK, err)
		}
		defer zk.Close()
		rf.credentials = broker.NewZooKeeperCredentials(zk)
	}
	if rf.checkpoint == "" {
		slog.Warn("schema registry: no --registry-checkpoint; if _schemas is deleted or rewound, this node can hand out schema ids already in records once restarted")
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

// registryCheckpointFile is the registry's checkpoint in a standalone
// data directory.
const registryCheckpointFile = "schema-registry-checkpoint"

// registryFlags are the registry's limits and security, shared by
// schema-registry and standalone.
type registryFlags struct {
	maxSchemaBytes, maxSchemaDepth   int
	maxSchemaNodes, maxUnionBranches int
	maxSchemaFields                  int
	checkTimeout                     time.Duration
	tlsCert, tlsKey                  string
	auth, rolesFile                  string
	acceptReset                      bool

	// checkpoint is the registry's checkpoint file: a flag of
	// schema-registry, in the data directory for standalone.
	checkpoint string

	// credentials are where --registry-auth basic checks passwords: the
	// broker's users. Set by the command, not by a flag.
	credentials registry.Credentials
	// kafkaOpts are how the registry's client reaches the brokers.
	kafkaOpts []kgo.Opt
}

func (f *registryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tlsCert, "registry-tls-cert", "", "PEM certificate chain `file`: the registry serves HTTPS only")
	fs.StringVar(&f.tlsKey, "registry-tls-key", "", "PEM private key `file` of --registry-tls-cert")
	fs.StringVar(&f.auth, "registry-auth", "", "`basic`: every request needs HTTP basic credentials of a broker user (`tributary users set`) with a role in --registry-roles; empty: no authentication")
	fs.StringVar(&f.rolesFile, "registry-roles", "", "`file` of `user = reader|writer|admin` lines (with --registry-auth basic); re-read when it changes")
	fs.IntVar(&f.maxSchemaBytes, "schema-max-bytes", registry.DefaultMaxSchemaBytes, "largest schema text the registry parses; larger ones get 42201")
	fs.IntVar(&f.maxSchemaDepth, "schema-max-depth", registry.DefaultMaxSchemaDepth, "deepest nesting of JSON objects and arrays in a schema the registry parses; deeper ones get 42201")
	fs.IntVar(&f.maxSchemaNodes, "schema-max-nodes", registry.DefaultMaxSchemaNodes, "most types, fields and unions in a schema the registry parses; more get 42201")
	fs.IntVar(&f.maxUnionBranches, "schema-max-union-branches", registry.DefaultMaxUnionBranches, "widest union in a schema the registry parses (several unions count as the square root of the sum of their widths squared); wider get 42201")
	fs.IntVar(&f.maxSchemaFields, "schema-max-fields", registry.DefaultMaxSchemaFields, "widest record or enum, in fields or symbols, in a schema the registry parses (several count as the square root of the sum of their widths squared); wider get 42201")
	fs.BoolVar(&f.acceptReset, "registry-accept-reset", false, "accept that _schemas lost records its checkpoint knew of (deleted, or restored from an older copy): new schema ids continue above the highest handed out; without it such a registry serves reads and refuses writes")
	fs.DurationVar(&f.checkTimeout, "schema-check-timeout", registry.DefaultCheckTimeout, "longest a compatibility check may take; longer ones get 42201")
}

// security returns the registry's certificate (nil: plain HTTP) and
// authentication settings.
func (f *registryFlags) security() (*registry.Certificate, *registry.BasicAuth, error) {
	var cert *registry.Certificate
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return nil, nil, errors.New("--registry-tls-cert and --registry-tls-key go together")
	}
	if f.tlsCert != "" {
		var err error
		if cert, err = registry.LoadCertificate(f.tlsCert, f.tlsKey); err != nil {
			return nil, nil, err
		}
	}
	switch f.auth {
	case "":
		if f.rolesFile != "" {
			return nil, nil, errors.New("--registry-roles needs --registry-auth basic")
		}
		return cert, nil, nil
	case "basic":
	default:
		return nil, nil, fmt.Errorf("--registry-auth %q: use basic, or leave it empty", f.auth)
	}
	if f.rolesFile == "" {
		return nil, nil, errors.New("--registry-auth basic needs --registry-roles, the file that gives users their roles")
	}
	if f.credentials == nil {
		return nil, nil, errors.New("--registry-auth basic needs the broker's users: --credentials-data-dir or --credentials-zookeeper")
	}
	roles, err := registry.OpenRolesFile(f.rolesFile)
	if err != nil {
		return nil, nil, err
	}
	if cert == nil {
		slog.Warn("schema registry: basic auth without --registry-tls-cert sends passwords in clear text")
	}
	return cert, &registry.BasicAuth{Credentials: f.credentials, Roles: roles}, nil
}

// reloadOnHangup reads cert's files again on every SIGHUP until the
// returned stop is called, as the broker does with its own: new HTTPS
// connections get the renewed certificate, open ones keep theirs, a pair
// that does not load is reported and the current one kept. The signal is
// caught from the call on, so a SIGHUP never kills the process.
func reloadOnHangup(cert *registry.Certificate) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		reloadLoop(ctx, hup, cert)
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

func reloadLoop(ctx context.Context, hup <-chan os.Signal, cert *registry.Certificate) {
	for {
		select {
		case <-hup:
			if err := cert.Reload(); err != nil {
				slog.Error("schema registry: TLS certificate reload failed; keeping the current certificate", "err", err)
				continue
			}
			attrs := []any{"cert", cert.CertFile}
			if leaf := cert.Leaf().Leaf; leaf != nil {
				attrs = append(attrs, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
			}
			slog.Info("schema registry: TLS certificate reloaded", attrs...)
		case <-ctx.Done():
			return
		}
	}
}

// serveRegistry answers the REST API on ln until ctx ends. It serves at
// once: 503 with the reason until _schemas is replayed, and for as long as
// it cannot be (wrong partition count, brokers down), so the process —
// in standalone, the broker — stays up. b, when set, is the broker of this
// process, which the registry writes through directly. ms is where its
// metrics and readiness go.
func serveRegistry(ctx context.Context, ln net.Listener, bootstrap []string, rf registryFlags, b *broker.Broker, ms *metrics.Server) error {
	cert, auth, err := rf.security()
	if err != nil {
		ln.Close()
		return err
	}
	var tc *tls.Config
	if cert != nil {
		tc = cert.TLSConfig()
		defer reloadOnHangup(cert)()
	}
	kcfg := registry.KafkaLogConfig{Bootstrap: bootstrap, Logger: slog.Default(), Opts: rf.kafkaOpts}
	if b != nil {
		kcfg.Append = func(ctx context.Context, recs []registry.Record) (int64, error) {
			irs := make([]broker.InternalRecord, len(recs))
			for i, r := range recs {
				irs[i] = broker.InternalRecord{Key: r.Key, Value: r.Value}
			}
			return b.AppendInternal(ctx, registry.DefaultTopic, 0, irs)
		}
	}
	node, err := registry.Start(registry.Config{Logger: slog.Default(), MaxSchemaBytes: rf.maxSchemaBytes, MaxSchemaDepth: rf.maxSchemaDepth,
		MaxSchemaNodes: rf.maxSchemaNodes, MaxUnionBranches: rf.maxUnionBranches, MaxSchemaFields: rf.maxSchemaFields, CheckTimeout: rf.checkTimeout,
		Checkpoint: rf.checkpoint, AcceptReset: rf.acceptReset, TLS: tc, Auth: auth},
		func(ctx context.Context) (registry.Log, error) { return registry.OpenKafkaLog(ctx, kcfg) })
	if err != nil {
		ln.Close()
		return fmt.Errorf("schema registry: %w", err)
	}
	defer node.Close()
	scheme := "http"
	if tc != nil {
		scheme = "https"
	}
	fmt.Printf("tributary schema registry: %s://%s (state on brokers %v)\n", scheme, ln.Addr(), bootstrap)
	ms.AddReadyCheck("registry", node.Ready)
	if err := node.ServeWithMetrics(ctx, ln, ms.Registry()); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("schema registry: %w", err)
	}
	return nil
}
