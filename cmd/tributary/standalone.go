package main

import (
	"context"
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := broker.New(bf.config())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", bf.listen)
	if err != nil {
		b.Close()
		return fmt.Errorf("broker listener: %w", err)
	}
	fmt.Printf("tributary standalone: broker on %s, data in %s\n", ln.Addr(), bf.dataDir)
	return serveBroker(ctx, b, ln)
}
