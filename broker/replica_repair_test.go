package broker_test

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/testenv"
)

// scrubbedCluster is three brokers on a real ZooKeeper whose logs roll
// small segments and scrub every 100 ms, and topic on all three with
// n acknowledged records "0".."n-1", one batch each.
func scrubbedCluster(t *testing.T, topic string, n int, extra ...func(*broker.Config)) ([]*testenv.Broker, *kadm.Client) {
	_, brokers, admin, _ := scrubbedClusterTo(t, topic, n, extra...)
	return brokers, admin
}

// scrubbedClusterTo is scrubbedCluster that also returns the ZooKeeper
// address and the brokers' configuration, to restart one.
func scrubbedClusterTo(t *testing.T, topic string, n int, extra ...func(*broker.Config)) (string, []*testenv.Broker, *kadm.Client, testenv.BrokerOption) {
	t.Helper()
	config := testenv.WithConfig(func(c *broker.Config) {
		c.ReplicaLagMax = 3 * time.Second
		c.MinInsyncReplicas = 2
		c.Log.SegmentBytes = 2048
		c.Log.ScrubInterval = 100 * time.Millisecond
		for _, fn := range extra {
			fn(c)
		}
	})
	connect, brokers := testenv.StartCluster(t, 3, config)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[0].Addr, brokers[1].Addr, brokers[2].Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	admin := kadm.NewClient(cl)
	testenv.Eventually(t, 10*time.Second, "creating the topic with 3 replicas", func() bool {
		resp, err := admin.CreateTopic(context.Background(), 1, 3, nil, topic)
		err = errors.Join(err, resp.Err)
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists)
	})
	testenv.Eventually(t, 30*time.Second, topic+" led with 3 in-sync replicas", func() bool {
		p := partitionMeta(t, admin, topic)
		return p.Leader >= 1 && len(p.ISR) == 3
	})
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers[0].Addr, brokers[1].Addr, brokers[2].Addr),
		kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range n {
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return connect, brokers, admin, config
}

// holdsBatch reports whether the segments in dir hold an intact batch
// (CRC checked) with offset.
func holdsBatch(t *testing.T, dir string, offset int64) bool {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(segs)
	for _, seg := range segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			continue // replaced meanwhile
		}
		for pos := 0; pos+61 <= len(data); {
			size := 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
			if size < 61 || pos+size > len(data) {
				break
			}
			base := int64(binary.BigEndian.Uint64(data[pos:]))
			last := base + int64(binary.BigEndian.Uint32(data[pos+23:]))
			if base <= offset && offset <= last {
				crc := crc32.Checksum(data[pos+21:pos+size], crc32.MakeTable(crc32.Castagnoli))
				return crc == binary.BigEndian.Uint32(data[pos+17:])
			}
			pos += size
		}
	}
	return false
}

// A byte flipped in a sealed segment of a running leader: its scrubber
// finds the damaged batch; the leader stops serving the partition, hands
// the leadership to another in-sync replica, cuts its log back to the
// batch and fetches it again. Consumers read every acknowledged record,
// and the old leader's log holds the batch again, intact, and is back in
// the ISR.
func TestDamagedLeaderStepsDownAndRepairsFromAReplica(t *testing.T) {
	const topic, n = "damaged-leader", 120
	brokers, admin := scrubbedCluster(t, topic, n)
	p := partitionMeta(t, admin, topic)
	dir := filepath.Join(brokers[p.Leader-1].DataDir, topic+"-0")
	flipLastByteOfBatch(t, dir, 20)

	testenv.Eventually(t, 30*time.Second, "another replica leads", func() bool {
		now := partitionMeta(t, admin, topic)
		return now.Leader >= 1 && now.Leader != p.Leader && now.LeaderEpoch > p.LeaderEpoch
	})
	if q, _ := filepath.Glob(filepath.Join(dir, "*.quarantine-*")); len(q) == 0 {
		t.Fatal("the damaged batch was not quarantined")
	}
	testenv.Eventually(t, 30*time.Second, "the old leader holds offset 20 again and is back in the isr", func() bool {
		_, err := os.Stat(filepath.Join(dir, log.RepairMarkerFile))
		return os.IsNotExist(err) && holdsBatch(t, dir, 20) && slices.Contains(partitionMeta(t, admin, topic).ISR, p.Leader)
	})
	got := consumeValues(t, []string{brokers[0].Addr, brokers[1].Addr, brokers[2].Addr}, topic, n)
	for i, v := range got {
		if v != strconv.Itoa(i) {
			t.Fatalf("offset %d holds %q", i, v)
		}
	}
	if rep, err := log.Verify(dir); err != nil || rep.Damaged() {
		t.Fatalf("the old leader's log after the repair: %+v, %v", rep, err)
	}
}

// With no other in-sync replica the leader cannot hand over: it serves the
// partition with the damaged batch missing and says so, rather than
// serving nothing. Once replicas that still hold the batch return and
// rejoin the ISR, it steps down after all and fetches the batch back.
func TestDamagedLoneLeaderServesTheGap(t *testing.T) {
	const topic, n = "lone-leader", 120
	logs := &logBuffer{}
	connect, brokers, admin, config := scrubbedClusterTo(t, topic, n, func(c *broker.Config) { c.Logger = logs.logger() })
	p := partitionMeta(t, admin, topic)
	var seeds []string
	for i, b := range brokers {
		if int32(i+1) != p.Leader { // StartCluster numbers its brokers from 1
			b.Stop()
		} else {
			seeds = append(seeds, b.Addr)
		}
	}
	testenv.Eventually(t, 30*time.Second, "the leader is alone in the isr", func() bool {
		return len(partitionMeta(t, admin, topic).ISR) == 1
	})
	flipLastByteOfBatch(t, filepath.Join(brokers[p.Leader-1].DataDir, topic+"-0"), 20)
	testenv.Eventually(t, 30*time.Second, "the leader says the batch cannot be repaired", func() bool {
		return strings.Contains(logs.String(), "cannot be repaired")
	})
	got := consumeValues(t, seeds, topic, n-1)
	if slices.Contains(got, "20") || len(got) != n-1 || got[19] != "19" || got[20] != "21" {
		t.Fatalf("consumed %v, want every record but 20", got)
	}

	for i, b := range brokers {
		if id := int32(i + 1); id != p.Leader {
			testenv.StartClusterBroker(t, connect, id, testenv.WithDataDir(b.DataDir), testenv.WithAddr(b.Addr), config)
		}
	}
	dir := filepath.Join(brokers[p.Leader-1].DataDir, topic+"-0")
	testenv.Eventually(t, 60*time.Second, "a returned replica leads and the old leader holds offset 20 again", func() bool {
		now := partitionMeta(t, admin, topic)
		return now.Leader >= 1 && now.Leader != p.Leader && holdsBatch(t, dir, 20)
	})
	got = consumeValues(t, []string{brokers[0].Addr, brokers[1].Addr, brokers[2].Addr}, topic, n)
	for i, v := range got {
		if v != strconv.Itoa(i) {
			t.Fatalf("offset %d holds %q after the replicas returned", i, v)
		}
	}
}

// A follower's scrubber finds a damaged batch in its own copy: it records
// where to fetch again, cuts its log back there at its next fetch and
// copies everything from the leader; the leadership does not move.
func TestDamagedFollowerFetchesTheBatchBack(t *testing.T) {
	const topic, n = "damaged-follower", 120
	brokers, admin := scrubbedCluster(t, topic, n)
	p := partitionMeta(t, admin, topic)
	follower := p.Replicas[0]
	if follower == p.Leader {
		follower = p.Replicas[1]
	}
	dir := filepath.Join(brokers[follower-1].DataDir, topic+"-0")
	flipLastByteOfBatch(t, dir, 20)
	testenv.Eventually(t, 30*time.Second, "the follower quarantined the batch", func() bool {
		q, _ := filepath.Glob(filepath.Join(dir, "*.quarantine-*"))
		return len(q) > 0
	})
	testenv.Eventually(t, 30*time.Second, "the follower holds offset 20 again, intact, with no repair pending", func() bool {
		_, err := os.Stat(filepath.Join(dir, log.RepairMarkerFile))
		return os.IsNotExist(err) && holdsBatch(t, dir, 20) && holdsBatch(t, dir, n-1)
	})
	if now := partitionMeta(t, admin, topic); now.Leader != p.Leader || now.LeaderEpoch != p.LeaderEpoch {
		t.Fatalf("the leadership moved: %+v, was %+v", now, p)
	}
}
