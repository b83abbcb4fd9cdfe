package system_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestReplicatedDiskLost loses a broker's disk for good: with a topic of
// three partitions and three replicas holding records, one broker is
// stopped, its data directory deleted entirely, and the broker restarted
// empty under the same id. It must fetch every partition it holds back
// from the leaders and rejoin the ISR; once it has, its segment files hold
// every record the others hold, offset for offset.
func TestReplicatedDiskLost(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	const topic, partitions, n = "disklost", 3, 600
	j := startJepsen(t, 3)
	testenv.Run(t, "", 0, "topics", "create", "--brokers", j.addrs()[0], "--partitions", strconv.Itoa(partitions),
		"--replication-factor", "3", "--config", "min.insync.replicas=2", topic)
	if !j.waitInSync(topic, partitions, 30*time.Second) {
		t.Fatal("the new topic's partitions are not led with three in-sync replicas")
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(j.addrs()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression())) // readSegments reads uncompressed batches
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(from, to int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Key: []byte(strconv.Itoa(i % 7)), Value: []byte(fmt.Sprintf("record-%d", i))})
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatalf("producing records %d..%d: %v", from, to, err)
		}
	}
	produce(0, n)

	// Broker 2 loses its disk: stopped, its whole data directory gone.
	lost := j.brokers[2]
	if err := lost.p.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping broker 2: %v", err)
	}
	if err := os.RemoveAll(lost.dir); err != nil {
		t.Fatal(err)
	}
	// Records written while it is away must come back to it too.
	produce(n, 2*n)
	j.start(t, 2)
	if !j.waitInSync(topic, partitions, 60*time.Second) {
		ps, _ := j.partitions(topic)
		t.Fatalf("broker 2, restarted empty, did not rejoin every ISR within 60s: %+v", ps)
	}
	ends := j.endOffsets(t, topic)

	// Stopped cleanly, every broker's files are final: broker 2's must
	// hold every offset below each high watermark, as the others do.
	j.stopAll(t)
	for p := range partitions {
		recs, err := readSegments(filepath.Join(lost.dir, fmt.Sprintf("%s-%d", topic, p)))
		if err != nil {
			t.Fatalf("broker 2, partition %d: %v", p, err)
		}
		for o := int64(0); o < ends[int32(p)]; o++ {
			if _, ok := recs[o]; !ok {
				t.Fatalf("broker 2, partition %d: offset %d of [0, %d) missing after re-replication", p, o, ends[int32(p)])
			}
		}
	}
	compareReplicas(t, j.dataDirs(), topic, partitions)
	var total int64
	for _, e := range ends {
		total += e
	}
	if total != 2*n {
		t.Fatalf("the partitions end at %v, %d records in all, want %d", ends, total, 2*n)
	}
}
