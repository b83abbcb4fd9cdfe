package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ManyCluster is the cluster half of the many-partitions run, on each of
// cfg.Systems: "tributary" (three `tributary broker` processes and
// ZooKeeper) and "kafka" (Apache Kafka, three KRaft nodes each broker and
// controller), by default both. Each creates one topic of partitions
// partitions at replication factor 3; each of rounds rounds kills one
// broker with SIGKILL (a different one each round), measures the time until
// Metadata names a live leader for every partition, restarts the broker and
// measures the time until every partition's ISR is full again. A step that
// does not finish within cfg.StepTimeout is reported as such.
func ManyCluster(ctx context.Context, cfg ManyConfig, partitions, rounds int) ([]ManyResult, error) {
	systems := cfg.Systems
	if len(systems) == 0 {
		systems = []string{"tributary", "kafka"}
	}
	for _, s := range systems {
		if s != "tributary" && s != "kafka" {
			return nil, fmt.Errorf("many partitions, cluster: unknown system %q (tributary or kafka)", s)
		}
	}
	work := cfg.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "tributary-many-cluster-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		work = d
	}
	var (
		rows []ManyResult
		errs []error
	)
	for _, s := range systems {
		dir := filepath.Join(work, s)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return rows, err
		}
		var nodes clusterNodes = &tributaryNodes{cfg: cfg, dir: dir}
		if s == "kafka" {
			var env []string
			if cfg.KafkaHeap != "" {
				env = []string{"KAFKA_HEAP=" + cfg.KafkaHeap}
			}
			nodes = &kafkaNodes{cfg: Config{Scripts: cfg.Scripts, PeerEnv: env}, dir: dir}
		}
		r, err := manyClusterOn(ctx, cfg, s+"-rf3", nodes, partitions, rounds)
		rows = append(rows, r...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s-rf3: %w", s, err))
		}
	}
	return rows, errors.Join(errs...)
}

// manyClusterOn runs the cluster measurements on one system, always
// stopping it.
func manyClusterOn(ctx context.Context, cfg ManyConfig, sys string, nodes clusterNodes, partitions, rounds int) (rows []ManyResult, err error) {
	log := cfg.Logger.With("system", sys)
	timeout := cmp.Or(cfg.StepTimeout, stepTimeout)
	add := func(measure string, v float64, err error) {
		r := ManyResult{System: sys, Measure: measure, Unit: "s", Value: v, Status: "ok"}
		if err != nil {
			r.Status, r.Value = "failed: "+oneLine(err.Error()), 0
		}
		log.Info("many partitions", "measure", measure, "value", v, "status", r.Status)
		rows = append(rows, r)
	}
	defer func() {
		if serr := nodes.stop(); serr != nil {
			log.Warn("many partitions: stopping the cluster", "err", serr)
		}
	}()
	addrs, err := nodes.start(ctx)
	if err != nil {
		return rows, err
	}
	all := strings.Join(addrs, ",")
	adm, cl, err := adminFor(all)
	if err != nil {
		return rows, err
	}
	defer cl.Close()
	const topic = "many-cluster"
	start := time.Now()
	c, cancel := context.WithTimeout(ctx, timeout)
	// The broker answering may not see all three registrations yet, and
	// refuses RF 3 until it does. A creation that outlasts the request's
	// timeout goes on: its partitions are waited for below.
	for {
		var resp kadm.CreateTopicResponses
		resp, err = adm.CreateTopics(c, int32(partitions), 3, nil, topic)
		if err == nil {
			err = resp.Error()
		}
		if errors.Is(err, kerr.RequestTimedOut) || errors.Is(err, kerr.TopicAlreadyExists) {
			err = nil
		}
		if !errors.Is(err, kerr.InvalidReplicationFactor) || c.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err == nil {
		err = waitReplicas(c, adm, topic, partitions, -1)
	}
	cancel()
	add(fmt.Sprintf("create %d partitions, RF 3, full ISR", partitions), time.Since(start).Seconds(), err)
	if err != nil {
		return rows, err
	}
	// A record in every partition, acks=all, before the first kill: every
	// replica then has its log, as in a cluster in use. Without it the
	// first round measured a cluster whose followers were still creating
	// their 3,000 logs (each a directory fsync, in the fetch path), which
	// held fetches up past their 10 s timeout.
	start = time.Now()
	err = produceToEach(ctx, all, topic, partitions, timeout)
	add(fmt.Sprintf("one record to each of %d partitions, acks=all", partitions), time.Since(start).Seconds(), err)
	if err != nil {
		return rows, err
	}
	for round := range rounds {
		victim := round % ClusterNodes
		id := int32(victim + 1)
		// Ask a survivor: the dead broker's address would not answer.
		sadm, scl, err := adminFor(addrs[(victim+1)%ClusterNodes])
		if err != nil {
			return rows, err
		}
		start := time.Now()
		if err := nodes.kill(victim); err != nil {
			scl.Close()
			return rows, err
		}
		c, cancel := context.WithTimeout(ctx, timeout)
		// The cluster's part: the broker's session expires (ZooKeeper's,
		// at its first tick past the timeout; KRaft's, when the
		// controller fences it) and the cluster drops it.
		gone := make(chan time.Duration, 1)
		go func() {
			if err := nodes.waitGone(c, victim); err == nil {
				gone <- time.Since(start)
			}
			close(gone)
		}()
		err = waitReplicas(c, sadm, topic, partitions, id)
		add(fmt.Sprintf("round %d: every leader live after kill -9 of broker %d", round+1, id), time.Since(start).Seconds(), err)
		// Leaders move once the session is gone, so its end is known by
		// now or soon after; a cluster that still lists the dead broker is
		// not waited for much longer.
		session := fmt.Sprintf("round %d: of which until its session expired", round+1)
		select {
		case d, ok := <-gone:
			if ok {
				add(session, d.Seconds(), nil)
			}
		case <-time.After(30 * time.Second):
			add(session, 0, errors.New("broker still registered 30 s after the leaders moved"))
		}
		cancel()
		start = time.Now()
		if err := nodes.restart(ctx, victim); err != nil {
			scl.Close()
			return rows, err
		}
		c, cancel = context.WithTimeout(ctx, timeout)
		err = waitReplicas(c, sadm, topic, partitions, -1)
		cancel()
		scl.Close()
		add(fmt.Sprintf("round %d: full ISR after restart of broker %d", round+1, id), time.Since(start).Seconds(), err)
	}
	return rows, nil
}

// waitReplicas polls Metadata until every partition of topic has a leader
// other than dead and, when dead is -1, an ISR of three.
func waitReplicas(ctx context.Context, adm *kadm.Client, topic string, partitions int, dead int32) error {
	var last string
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			t, ok := md.Topics[topic]
			good := 0
			if ok {
				for _, p := range t.Partitions {
					if p.Leader < 0 || p.Leader == dead || p.Err != nil {
						continue
					}
					if dead < 0 && len(p.ISR) < ClusterNodes {
						continue
					}
					good++
				}
			}
			if good == partitions {
				return nil
			}
			last = fmt.Sprintf("%d of %d partitions ready", good, partitions)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return errors.New(last + ": " + ctx.Err().Error())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitUnregistered waits until id is no longer a child of path on the
// ZooKeeper at addr.
func waitUnregistered(ctx context.Context, addr, path string, id int) (time.Time, error) {
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close()
	for {
		kids, _, err := conn.Children(path)
		if err == nil && !slices.Contains(kids, strconv.Itoa(id)) {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// produceToEach writes one record to every partition of topic with
// acks=all and waits for every answer.
func produceToEach(ctx context.Context, addrs, topic string, partitions int, timeout time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")...),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(partitions+1),
		kgo.ProduceRequestTimeout(30*time.Second), kgo.RecordDeliveryTimeout(timeout))
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, partitions)
	for p := range recs {
		recs[p] = &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte("many partitions")}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}
