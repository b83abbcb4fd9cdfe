package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/clientsec"
)

func init() {
	register("standalone", "run one broker (and the schema registry) on a local data directory, no ZooKeeper", runStandalone)
}

// runStandalone runs the broker and, unless --registry-listen is empty,
// the schema registry in one process. The registry's Kafka client reaches
// the broker in-process by default (broker.DialInternal), as
// broker.InternalPrincipal, which the authorizer lets do anything on the
// internal topics and nothing else: so the registry works under
// --authorizer without an ACL, on any listeners, and nobody outside the
// process gains anything. Given --registry-kafka-* credentials it logs in
// over the listener they speak instead, as that user, under its ACLs.
func runStandalone(ctx context.Context, args []string) error {
	var err error
	fs := newFlags("standalone")
	var bf brokerFlags
	bf.register(fs, "127.0.0.1:9092")
	registryListen := fs.String("registry-listen", "127.0.0.1:8081", "schema registry HTTP address `host:port`; empty runs no registry")
	var rf registryFlags
	rf.register(fs)
	var rsec clientsec.Kafka
	rsec.Register(fs, "registry-kafka-") // how the registry's own client logs in; default: in-process
	if err := fs.Parse(args); err != nil {
		return err
	}
	raiseProcsForBlockingIO() // procs.go
	if rf.kafkaOpts, err = rsec.Opts(); err != nil {
		return fmt.Errorf("--registry-kafka-*: %w", err)
	}
	rf.credentials = broker.OpenCredentialFile(broker.CredentialFilePath(bf.dataDir)) // the broker's own users
	rf.checkpoint = filepath.Join(bf.dataDir, registryCheckpointFile)
	b, err := broker.New(bf.config())
	if err != nil {
		return err
	}
	ls, lns, err := bf.openListeners()
	if err != nil {
		b.Close()
		return err
	}
	var regLn net.Listener
	var brokerAddr string
	if *registryListen != "" {
		if brokerAddr, err = registryBrokerAddr(rsec, ls, lns); err != nil {
			closeAll(lns)
			b.Close()
			return err
		}
		if rsec == (clientsec.Kafka{}) {
			rf.kafkaOpts = []kgo.Opt{kgo.Dialer(b.DialInternal)}
		}
		if regLn, err = net.Listen("tcp", *registryListen); err != nil {
			closeAll(lns)
			b.Close()
			return fmt.Errorf("registry listener: %w", err)
		}
	}
	ms, stopMetrics, err := startMetrics(*bf.metricsListen)
	if err != nil {
		closeAll(lns)
		if regLn != nil {
			regLn.Close()
		}
		b.Close()
		return err
	}
	defer stopMetrics()
	watchBroker(ms, b)
	fmt.Printf("tributary standalone: broker on %s, data in %s\n", describeListeners(ls, lns), bf.dataDir)
	if regLn == nil {
		return serveBroker(ctx, b, ls, lns)
	}
	// The registry keeps its state on this broker, so it starts once the
	// broker serves, and stops before it.
	regCtx, stopRegistry := context.WithCancel(ctx)
	defer stopRegistry()
	brokerCtx, stopBroker := context.WithCancel(context.Background())
	defer stopBroker()
	brokerDone := make(chan error, 1)
	go func() { brokerDone <- serveBroker(brokerCtx, b, ls, lns) }()
	select {
	case <-b.Serving():
	case err := <-brokerDone:
		regLn.Close()
		return err
	}
	regDone := make(chan error, 1)
	go func() { regDone <- serveRegistry(regCtx, regLn, []string{brokerAddr}, rf, b, ms) }()
	var err1, err2 error
	select {
	case err1 = <-regDone:
		// Interrupted, or the registry's listener failed (a broken
		// _schemas only makes the registry answer 503): then the broker
		// goes down too, so that a supervisor sees the job fail.
		stopBroker()
		err2 = <-brokerDone
	case err2 = <-brokerDone:
		stopRegistry()
		err1 = <-regDone
	}
	return errors.Join(err1, err2)
}

// registryBrokerAddr is the address the registry's client is given: with
// credentials, the listener of the protocol they speak; in-process, the
// first listener's (the dialer maps every address to the broker).
func registryBrokerAddr(sec clientsec.Kafka, ls []broker.Listener, lns []net.Listener) (string, error) {
	if sec == (clientsec.Kafka{}) {
		return lns[0].Addr().String(), nil
	}
	want := broker.SecurityProtocol(sec.Protocol())
	for i, l := range ls {
		if l.Protocol == want {
			return lns[i].Addr().String(), nil
		}
	}
	return "", fmt.Errorf("the --registry-kafka-* flags speak %s, and no listener does: add one to --listeners, or drop those flags to connect the registry in-process", want)
}
