package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/clientsec"
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
	lagMax := fs.Duration("replica-lag-time-max", 30*time.Second, "a follower that has not caught up with its leader for this long leaves the ISR (replica.lag.time.max.ms)")
	minISR := fs.Int("min-insync-replicas", 1, "default of the topic config min.insync.replicas: acks=all needs this many in-sync replicas")
	unclean := fs.Bool("unclean-leader-election-enable", false, "default of the topic config unclean.leader.election.enable: when no in-sync replica of a partition is alive, let another live replica lead it, losing the records acknowledged above its log end, rather than keep it offline")
	defaultRF := fs.Int("default-replication-factor", 1, "replication factor of auto-created topics and of CreateTopics asking for -1")
	interListener := fs.String("inter-broker-listener", "", "listener of the leaders that followers replicate from: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (security.inter.broker.protocol); default: the one the --inter-broker-tls*/--inter-broker-sasl-* flags speak")
	var inter clientsec.Kafka
	inter.Register(fs, "inter-broker-")
	rack := fs.String("rack", "", "the rack (or zone) this broker runs in: replicas of a partition go to different racks first")
	rebalance := fs.Bool("auto-leader-rebalance", true, "the controller moves leaderships back to preferred replicas by itself (auto.leader.rebalance.enable)")
	rebalanceEvery := fs.Duration("leader-rebalance-interval", cluster.DefaultLeaderRebalance, "how often the controller checks for leaderships to move back to preferred replicas")
	session := fs.Duration("zookeeper-session-timeout", cluster.DefaultBrokerSessionTimeout, "how long after this broker's last contact ZooKeeper declares it dead and the controller moves its leaderships (zookeeper.session.timeout.ms); ZooKeeper ends a session at its first tick past this, and clamps it to 2-20 ticks (4-40 s at its default tickTime of 2 s)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raiseProcsForBlockingIO() // procs.go
	if *session <= 0 {
		return fmt.Errorf("--zookeeper-session-timeout %v: must be positive", *session)
	}
	if *id < 0 || *zk == "" {
		return errors.New("--id and --zookeeper are required: tributary broker --id 1 --zookeeper 127.0.0.1:2181/tributary --listen 127.0.0.1:9093")
	}
	if err := checkInterBroker(*interListener, inter); err != nil {
		return err
	}
	ls, lns, err := bf.openListeners()
	if err != nil {
		return err
	}
	eps := make([]cluster.Endpoint, len(ls))
	for i := range ls {
		eps[i] = broker.ListenerEndpoint(ls[i], lns[i])
	}
	self := broker.SelfWithEndpoints(cluster.Broker{ID: int32(*id), Rack: *rack}, eps)
	if !*rebalance {
		*rebalanceEvery = 0
	}
	// Until ctx ends (a signal), joining waits for ZooKeeper, logging why
	// it cannot register yet; its errors name the connect string.
	meta, err := cluster.JoinZooKeeper(ctx, *zk, self, slog.Default(), cluster.WithLeaderRebalance(*rebalanceEvery),
		cluster.WithSessionTimeout(*session))
	if err != nil {
		closeAll(lns)
		return err
	}
	cfg := bf.config()
	cfg.Metadata = meta
	cfg.ReplicaLagMax, cfg.MinInsyncReplicas, cfg.DefaultReplicationFactor = *lagMax, *minISR, *defaultRF
	cfg.UncleanLeaderElection = *unclean
	cfg.InterBrokerListener, cfg.InterBroker = broker.SecurityProtocol(*interListener), inter
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
	ms.AddReadyCheck("broker_registry", meta.Registered)
	fmt.Printf("tributary broker %d: listening on %s, cluster %s, data in %s\n", *id, describeListeners(ls, lns), *zk, bf.dataDir)
	return serveBroker(ctx, b, ls, lns)
}

// checkInterBroker refuses, before the broker starts, inter-broker
// settings its followers could not connect with.
func checkInterBroker(listener string, sec clientsec.Kafka) error {
	if _, err := sec.TLSConfig(); err != nil {
		return fmt.Errorf("--inter-broker-tls-*: %w", err)
	}
	mech, err := sec.Mechanism()
	if err != nil {
		return fmt.Errorf("--inter-broker-sasl-*: %w", err)
	}
	p := broker.SecurityProtocol(listener)
	switch p {
	case "", broker.Plaintext, broker.SSL, broker.SASLPlaintext, broker.SASLSSL:
	default:
		return fmt.Errorf("--inter-broker-listener %q: use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", listener)
	}
	if p.SASL() && mech == nil {
		return fmt.Errorf("--inter-broker-listener %s needs --inter-broker-sasl-mechanism, --inter-broker-sasl-user and --inter-broker-sasl-password-file", p)
	}
	return nil
}
