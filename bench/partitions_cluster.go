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
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ManyCluster is the cluster half of the many-partitions run: three
// `tributary broker` processes and ZooKeeper, one topic of partitions
// partitions at replication factor 3. Each of rounds rounds kills one broker
// with SIGKILL (a different one each round), measures the time until
// Metadata names a live leader for every partition, restarts the broker
// and measures the time until every partition's ISR is full again. A step
// that does not finish within stepTimeout is reported as such.
func ManyCluster(ctx context.Context, cfg ManyConfig, partitions, rounds int) ([]ManyResult, error) {
	work := cfg.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "tributary-many-cluster-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		work = d
	}
	const sys = "tributary-rf3"
	log := cfg.Logger.With("system", sys)
	var rows []ManyResult
	add := func(measure string, v float64, err error) {
		r := ManyResult{System: sys, Measure: measure, Unit: "s", Value: v, Status: "ok"}
		if err != nil {
			r.Status, r.Value = "failed: "+oneLine(err.Error()), 0
		}
		log.Info("many partitions", "measure", measure, "value", v, "status", r.Status)
		rows = append(rows, r)
	}
	base, err := freePortRange(ClusterNodes + 1)
	if err != nil {
		return nil, err
	}
	const chroot = "/tributary-many"
	zkProc, err := startZooKeeper(ctx, filepath.Join(work, "zookeeper"), base+ClusterNodes, chroot)
	if err != nil {
		return nil, err
	}
	connect := fmt.Sprintf("127.0.0.1:%d%s", base+ClusterNodes, chroot)
	brokers := make([]*process, ClusterNodes)
	addrs := make([]string, ClusterNodes)
	startBroker := func(i int) error {
		id := i + 1
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", base+i)
		data := filepath.Join(work, "data", fmt.Sprintf("b%d", id))
		if err := os.MkdirAll(data, 0o755); err != nil {
			return err
		}
		args := append([]string{"broker", "--id", fmt.Sprint(id), "--zookeeper", connect,
			"--data-dir", data, "--listen", addrs[i]}, cfg.TributaryArgs...)
		p, err := startProcess(fmt.Sprintf("tributary broker %d", id),
			filepath.Join(work, fmt.Sprintf("broker-%d-%d.log", id, time.Now().UnixNano())),
			[]string{"TRIBUTARY_LOG=" + cmp.Or(cfg.LogLevel, "info")}, cfg.TributaryBinary, args...)
		if err != nil {
			return err
		}
		brokers[i] = p
		return waitListening(ctx, addrs[i], p.done, stepTimeout)
	}
	defer func() {
		var live []*process
		for _, p := range brokers {
			if p != nil {
				live = append(live, p)
			}
		}
		stopAll(live, zkProc)
	}()
	for i := range brokers {
		if err := startBroker(i); err != nil {
			return rows, err
		}
	}
	zkAddr := fmt.Sprintf("127.0.0.1:%d", base+ClusterNodes)
	if _, err := waitRegistered(ctx, zkAddr, chroot+"/brokers/ids", ClusterNodes, stepTimeout); err != nil {
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
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	// The broker answering may not see all three registrations yet, and
	// refuses RF 3 until it does.
	for {
		var resp kadm.CreateTopicResponses
		resp, err = adm.CreateTopics(c, int32(partitions), 3, nil, topic)
		if err == nil {
			err = resp.Error()
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
	err = produceToEach(ctx, all, topic, partitions)
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
		brokers[victim].cmd.Process.Signal(syscall.SIGKILL)
		<-brokers[victim].done
		c, cancel := context.WithTimeout(ctx, stepTimeout)
		// ZooKeeper's part: the session expires (the broker's session
		// timeout, at ZooKeeper's first tick past it) and the
		// registration goes.
		gone := make(chan time.Duration, 1)
		go func() {
			_, err := waitUnregistered(c, zkAddr, chroot+"/brokers/ids", int(id))
			if err == nil {
				gone <- time.Since(start)
			}
			close(gone)
		}()
		err = waitReplicas(c, sadm, topic, partitions, id)
		cancel()
		add(fmt.Sprintf("round %d: every leader live after kill -9 of broker %d", round+1, id), time.Since(start).Seconds(), err)
		if d, ok := <-gone; ok {
			add(fmt.Sprintf("round %d: of which until its session expired", round+1), d.Seconds(), nil)
		}
		start = time.Now()
		if err := startBroker(victim); err != nil {
			scl.Close()
			return rows, err
		}
		c, cancel = context.WithTimeout(ctx, stepTimeout)
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
func produceToEach(ctx context.Context, addrs, topic string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")...),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(partitions+1),
		kgo.ProduceRequestTimeout(30*time.Second), kgo.RecordDeliveryTimeout(stepTimeout))
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
