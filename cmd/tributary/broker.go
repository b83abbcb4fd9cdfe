package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	register("broker", "run a broker that joins a cluster coordinated through ZooKeeper", runBroker)
}

func runBroker(ctx context.Context, args []string) error {
	fs := newFlags("broker")
	var bf brokerFlags
	bf.register(fs, "127.0.0.1:9092")
	id := fs.Int("id", -1, "this broker's id, unique in the cluster (required)")
	zk := fs.String("zookeeper", "", "ZooKeeper connect string `host:port[,host:port]/chroot` (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *id < 0 || *zk == "" {
		return errors.New("--id and --zookeeper are required: tributary broker --id 1 --zookeeper 127.0.0.1:2181/tributary --listen 127.0.0.1:9093")
	}
	ls, lns, err := bf.openListeners()
	if err != nil {
		return err
	}
	eps := make([]cluster.Endpoint, len(ls))
	for i := range ls {
		eps[i] = broker.ListenerEndpoint(ls[i], lns[i])
	}
	self := broker.SelfWithEndpoints(cluster.Broker{ID: int32(*id)}, eps)
	meta, err := cluster.JoinZooKeeper(ctx, *zk, self, slog.Default())
	if err != nil {
		closeAll(lns)
		return fmt.Errorf("joining the cluster at %s: %w", *zk, err)
	}
	cfg := bf.config()
	cfg.Metadata = meta
	b, err := broker.New(cfg)
	if err != nil {
		meta.Close()
		closeAll(lns)
		return err
	}
	ms, stopMetrics, err := startMetrics(*bf.metricsListen)
	if err != nil {
		b.Close()
		closeAll(lns)
		return err
	}
	defer stopMetrics()
	watchBroker(ms, b)
	ms.AddReadyCheck("zookeeper", zkReady(meta.Session().Conn))
	fmt.Printf("tributary broker %d: listening on %s, cluster %s, data in %s\n", *id, describeListeners(ls, lns), *zk, bf.dataDir)
	return serveBroker(ctx, b, ls, lns)
}
