package main

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/tributary-io/tributary/broker"
)

func init() {
	register("standalone", "run one broker (and the schema registry) on a local data directory, no ZooKeeper", runStandalone)
}

func runStandalone(ctx context.Context, args []string) error {
	fs := newFlags("standalone")
	var bf brokerFlags
	bf.register(fs, "127.0.0.1:9092")
	registryListen := fs.String("registry-listen", "127.0.0.1:8081", "schema registry HTTP address `host:port`; empty runs no registry")
	var rf registryFlags
	rf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	rf.credentials = broker.OpenCredentialFile(broker.CredentialFilePath(bf.dataDir)) // the broker's own users
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
		var ok bool
		if brokerAddr, ok = plaintextAddr(ls, lns); !ok {
			closeAll(lns)
			b.Close()
			return errors.New("the schema registry reaches the broker over a PLAINTEXT listener: add one to --listeners, or run no registry (--registry-listen '')")
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
	regDone := make(chan error, 1)
	go func() { regDone <- serveRegistry(regCtx, regLn, []string{brokerAddr}, rf, b, ms) }()
	brokerDone := make(chan error, 1)
	go func() { brokerDone <- serveBroker(brokerCtx, b, ls, lns) }()
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
