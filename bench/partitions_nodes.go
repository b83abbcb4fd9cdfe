package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterNodes is the three-broker cluster ManyCluster measures: it starts
// them, kills one with SIGKILL and starts it again on its data, the same
// way for Tributary and for Kafka, so that both are timed by one loop.
// Node i (0 to 2) is broker id i+1.
type clusterNodes interface {
	// start starts every node and returns their client addresses once
	// the cluster knows all three.
	start(ctx context.Context) ([]string, error)
	// kill sends SIGKILL to node i and returns once it has exited.
	kill(i int) error
	// restart starts node i again on its data and returns once it takes
	// connections.
	restart(ctx context.Context, i int) error
	// waitGone returns once the cluster no longer lists node i: its
	// session expired.
	waitGone(ctx context.Context, i int) error
	// stop stops every node still running.
	stop() error
}

// manyChroot is the ZooKeeper chroot of the Tributary cluster.
const manyChroot = "/tributary-many"

// tributaryNodes is three `tributary broker` processes and the ZooKeeper
// they register with, all in dir.
type tributaryNodes struct {
	cfg     ManyConfig
	dir     string
	base    int // brokers on base..base+2, ZooKeeper on base+3
	zk      *process
	brokers []*process
	addrs   []string
}

func (t *tributaryNodes) zkAddr() string { return fmt.Sprintf("127.0.0.1:%d", t.base+ClusterNodes) }

func (t *tributaryNodes) start(ctx context.Context) ([]string, error) {
	base, err := freePortRange(ClusterNodes + 1)
	if err != nil {
		return nil, err
	}
	t.base = base
	t.zk, err = startZooKeeper(ctx, filepath.Join(t.dir, "zookeeper"), base+ClusterNodes, manyChroot)
	if err != nil {
		return nil, err
	}
	t.brokers = make([]*process, ClusterNodes)
	t.addrs = make([]string, ClusterNodes)
	for i := range t.brokers {
		t.addrs[i] = fmt.Sprintf("127.0.0.1:%d", base+i)
		if err := t.restart(ctx, i); err != nil {
			return nil, err
		}
	}
	if _, err := waitRegistered(ctx, t.zkAddr(), manyChroot+"/brokers/ids", ClusterNodes, stepTimeout); err != nil {
		return nil, err
	}
	return t.addrs, nil
}

func (t *tributaryNodes) restart(ctx context.Context, i int) error {
	id := i + 1
	data := filepath.Join(t.dir, "data", fmt.Sprintf("b%d", id))
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	connect := t.zkAddr() + manyChroot
	args := append([]string{"broker", "--id", fmt.Sprint(id), "--zookeeper", connect,
		"--data-dir", data, "--listen", t.addrs[i]}, t.cfg.TributaryArgs...)
	p, err := startProcess(fmt.Sprintf("tributary broker %d", id),
		filepath.Join(t.dir, fmt.Sprintf("broker-%d-%d.log", id, time.Now().UnixNano())),
		[]string{"TRIBUTARY_LOG=" + cmp.Or(t.cfg.LogLevel, "info")}, t.cfg.TributaryBinary, args...)
	if err != nil {
		return err
	}
	t.brokers[i] = p
	if err := waitListening(ctx, t.addrs[i], p.done, stepTimeout); err != nil {
		return p.failure(err)
	}
	return nil
}

func (t *tributaryNodes) kill(i int) error {
	p := t.brokers[i]
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 of %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

func (t *tributaryNodes) waitGone(ctx context.Context, i int) error {
	_, err := waitUnregistered(ctx, t.zkAddr(), manyChroot+"/brokers/ids", i+1)
	return err
}

func (t *tributaryNodes) stop() error {
	var live []*process
	for _, p := range t.brokers {
		if p != nil {
			live = append(live, p)
		}
	}
	if t.zk == nil {
		return nil
	}
	return stopAll(live, t.zk)
}

// kafkaNodes is Apache Kafka as peer.sh runs kafka-rf3: three JVMs, each a
// broker and a voter of the KRaft quorum (so a kill -9 may take the active
// controller with it, as it may take Tributary's), node i taking clients on
// port+2i.
type kafkaNodes struct {
	cfg   Config // Scripts and PeerEnv (KAFKA_HEAP)
	dir   string
	port  int
	pids  []int
	addrs []string
	halt  func() error // peer.sh stop
}

const kafkaClusterPeer = "kafka-rf3"

func (k *kafkaNodes) start(ctx context.Context) ([]string, error) {
	port, err := freePortRange(2 * ClusterNodes)
	if err != nil {
		return nil, err
	}
	k.port = port
	srv, err := startPeerOn(kafkaClusterPeer, ClusterNodes, port)(ctx, k.cfg, k.dir)
	if err != nil {
		return nil, err
	}
	k.pids, k.halt = srv.pids, srv.stop
	k.addrs = strings.Split(srv.addr, ",")
	// Waits until Metadata lists every broker.
	d, err := connectKafka(ctx, srv.addr)
	if err != nil {
		return nil, err
	}
	d.Close()
	return k.addrs, nil
}

func (k *kafkaNodes) kill(i int) error {
	pid := k.pids[i]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 of Kafka node %d (pid %d): %w", i+1, pid, err)
	}
	for deadline := time.Now().Add(30 * time.Second); !pidGone(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d of Kafka (pid %d) still runs 30 s after SIGKILL", i+1, pid)
		}
	}
	return nil
}

func (k *kafkaNodes) restart(ctx context.Context, i int) error {
	pid, err := restartPeerNode(ctx, k.cfg, kafkaClusterPeer, k.dir, k.port, i+1)
	if err != nil {
		return err
	}
	k.pids[i] = pid
	return nil
}

// waitGone asks a survivor until the controller has fenced node i, which
// it does when the node's heartbeats stop for broker.session.timeout.ms.
// A fenced broker stays in Kafka's Metadata answers: DescribeCluster (v2,
// Kafka 4.0 and later) is what says it is fenced.
func (k *kafkaNodes) waitGone(ctx context.Context, i int) error {
	_, cl, err := adminFor(k.addrs[(i+1)%len(k.addrs)])
	if err != nil {
		return err
	}
	defer cl.Close()
	id := int32(i + 1)
	for {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeFencedBrokers = true
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil {
			live := false
			for _, b := range resp.Brokers {
				live = live || (b.NodeID == id && !b.IsFenced)
			}
			if !live {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (k *kafkaNodes) stop() error {
	if k.halt == nil {
		return nil
	}
	return k.halt()
}
