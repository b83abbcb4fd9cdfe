package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestRestartedFollowerRecoversItsPartitionsTogether: a broker back from an
// unclean stop leads none of its replicated partitions (the controller
// moved them while it was away), and recovers the ones it follows several
// at a time before it serves, as it does the ones it leads. Only led
// partitions used to be recovered at start: the fetchers opened the
// followed ones one after the other in their first round, fsyncing each,
// and at 3,000 partitions on a busy disk the restarted broker was back in
// every ISR 7-18 s after its start instead of 2-4.
func TestRestartedFollowerRecoversItsPartitionsTogether(t *testing.T) {
	testenv.Slow(t, "a broker of a 3-broker cluster recovers 60 partitions on a disk of 5 ms fsyncs")
	const n, topic = 60, "recover-followed"
	connect, brokers := testenv.StartCluster(t, 3)
	adm := kadm.NewClient(newClient(t, brokers[0].Addr))
	ctx := context.Background()
	var last error
	testenv.Eventually(t, 30*time.Second, "creating the topic at RF 3", func() bool {
		resp, err := adm.CreateTopic(ctx, n, 3, nil, topic)
		last = errors.Join(err, resp.Err)
		return last == nil || errors.Is(last, kerr.TopicAlreadyExists)
	})
	inSync := func(want int, without int32) func() (bool, string) {
		return func() (bool, string) {
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				return false, err.Error()
			}
			good := 0
			for _, p := range md.Topics[topic].Partitions {
				if p.Leader > 0 && p.Leader != without && len(p.ISR) == want {
					good++
				}
			}
			return good == n, fmt.Sprintf("%d of %d partitions led with an ISR of %d", good, n, want)
		}
	}
	testenv.Eventuallyf(t, 60*time.Second, inSync(3, -1))
	// A record in each partition, on every replica: each has a log to
	// recover.
	cl := newClient(t, brokers[0].Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := cl.ProduceSync(ctx, onePerPartition([]string{topic}, n, []byte("x"))...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	old := brokers[2]
	old.Stop()
	testenv.Eventuallyf(t, 60*time.Second, inSync(2, 3))
	// As after a kill -9 before the next recovery checkpoint: no
	// partition says it shut down cleanly, and each must make what it
	// scanned durable.
	markers, _ := filepath.Glob(filepath.Join(old.DataDir, topic+"-*", ".clean-shutdown"))
	if len(markers) != n {
		t.Fatalf("%d clean-shutdown markers, want %d", len(markers), n)
	}
	for _, m := range markers {
		for _, f := range []string{m, filepath.Join(filepath.Dir(m), "recovery-checkpoint")} {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	disk := &slowDisk{delay: 5 * time.Millisecond}
	testenv.StartClusterBroker(t, connect, 3, testenv.WithDataDir(old.DataDir), testenv.WithAddr(old.Addr),
		testenv.WithConfig(func(c *broker.Config) { c.Log.FS = disk }))
	t.Logf("at most %d fsyncs at once during the restart", disk.most.Load())
	if disk.most.Load() < 4 {
		t.Errorf("the restarted broker ran at most %d fsyncs at once before it served: its followed partitions were not recovered together at start", disk.most.Load())
	}
	testenv.Eventuallyf(t, 60*time.Second, inSync(3, -1))
}

// TestFollowerOpensNewPartitionsTogether: a follower of a new topic opens
// the logs its first fetch round names several at a time. Each new log
// costs a directory fsync; one after the other, a follower of a new
// 3,000-partition topic spent seconds in its first round, and fetches
// waiting on such rounds ran past their 10 s timeout.
func TestFollowerOpensNewPartitionsTogether(t *testing.T) {
	testenv.Slow(t, "a broker of a 3-broker cluster creates 40 followed partitions on a disk of 5 ms fsyncs")
	const n, topic = 60, "open-followed"
	connect := testenv.StartZooKeeper(t)
	b1 := testenv.StartClusterBroker(t, connect, 1)
	testenv.StartClusterBroker(t, connect, 2)
	disk := &slowDisk{delay: 5 * time.Millisecond}
	testenv.StartClusterBroker(t, connect, 3, testenv.WithConfig(func(c *broker.Config) { c.Log.FS = disk }))
	adm := kadm.NewClient(newClient(t, b1.Addr))
	var last error
	testenv.Eventually(t, 30*time.Second, "creating the topic at RF 3", func() bool {
		resp, err := adm.CreateTopic(context.Background(), n, 3, nil, topic)
		last = errors.Join(err, resp.Err)
		return last == nil || errors.Is(last, kerr.TopicAlreadyExists)
	})
	// Broker 3 follows two thirds of the partitions: each new log's
	// directory is synced once.
	testenv.Eventuallyf(t, 60*time.Second, func() (bool, string) {
		s := disk.syncs.Load()
		return s >= 2*n/3, fmt.Sprintf("%d fsyncs on broker 3", s)
	})
	t.Logf("at most %d fsyncs at once while broker 3 created its logs", disk.most.Load())
	// One after the other, its two fetchers and the two followers'
	// fetches it serves as leader make at most 4 at once (3 seen).
	if disk.most.Load() < 6 {
		t.Errorf("broker 3 ran at most %d fsyncs at once: it created the logs it follows one after the other", disk.most.Load())
	}
}
