package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

var (
	manyTopics     = flag.Int("many.topics", 2000, "BenchmarkManyPartitions: topics")
	manyPartitions = flag.Int("many.partitions", 5, "BenchmarkManyPartitions: partitions per topic")
	manySystems    = flag.String("many.systems", "tributary,kafka", "BenchmarkManyPartitions: systems, comma-separated")
	manyCluster    = flag.Int("many.cluster-partitions", 3000, "BenchmarkManyPartitionsCluster: partitions of the RF 3 topic")
	manyRounds     = flag.Int("many.rounds", 5, "BenchmarkManyPartitionsCluster: kill -9 and restart rounds")
	manyWorkDir    = flag.String("many.workdir", "", "BenchmarkManyPartitions*: keep the brokers' data and logs here (default: a temporary directory, removed)")
	manyBinary     = flag.String("many.binary", "", "BenchmarkManyPartitions*: the tributary executable (default: built from this tree)")
	manyArgs       = flag.String("many.args", "", "BenchmarkManyPartitionsCluster: more flags for every `tributary broker`, space-separated (say --zookeeper-session-timeout 6s)")
	manyLogLevel   = flag.String("many.log", "info", "BenchmarkManyPartitionsCluster: the brokers' TRIBUTARY_LOG level (debug logs every ISR change)")
	manyZKTick     = flag.Duration("many.zk-tick", 2*time.Second, "BenchmarkManyPartitionsCluster: ZooKeeper's tickTime (a session expires at the first tick after its timeout)")
	manyClusterSys = flag.String("many.cluster-systems", "tributary,kafka", "BenchmarkManyPartitionsCluster: systems, comma-separated (tributary, kafka)")
	manyKafkaHeap  = flag.String("many.kafka-heap", "768m", "BenchmarkManyPartitionsCluster: each Kafka JVM's heap (-Xmx and -Xms)")
	manyStep       = flag.Duration("many.step-timeout", stepTimeout, "BenchmarkManyPartitionsCluster: bound of each step (create, a round's leaders, a round's full ISR)")
)

func manyBinaryFor(b *testing.B) string {
	if *manyBinary != "" {
		return *manyBinary
	}
	return testenv.Binary(b)
}

// BenchmarkManyPartitions is the standalone half of the many-partitions
// run (partitions.go; make bench-partitions). It runs once whatever
// -benchtime says and prints its table: the figures are the report, not
// ns/op.
func BenchmarkManyPartitions(b *testing.B) {
	testenv.Needs(b, testenv.Tributary, testenv.JVM)
	rows, err := ManyPartitions(context.Background(), ManyConfig{
		Topics: *manyTopics, Partitions: *manyPartitions,
		TributaryBinary: manyBinaryFor(b), Scripts: "../scripts/bench",
		Systems: strings.Split(*manySystems, ","), WorkDir: *manyWorkDir,
		Logger: testenv.Logger(b, 0),
	})
	fmt.Printf("Standalone, %d topics x %d partitions:\n", *manyTopics, *manyPartitions)
	WriteManyTable(os.Stdout, rows)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
	}
}

// BenchmarkManyPartitionsCluster is the cluster half (partitions_cluster.go).
func BenchmarkManyPartitionsCluster(b *testing.B) {
	testenv.Needs(b, testenv.Tributary, testenv.ZooKeeper, testenv.JVM)
	ZooKeeperTick = *manyZKTick
	rows, err := ManyCluster(context.Background(), ManyConfig{
		TributaryBinary: manyBinaryFor(b), Logger: testenv.Logger(b, 0), WorkDir: *manyWorkDir,
		LogLevel: *manyLogLevel, TributaryArgs: strings.Fields(*manyArgs),
		Systems: strings.Split(*manyClusterSys, ","), Scripts: "../scripts/bench",
		KafkaHeap: *manyKafkaHeap, StepTimeout: *manyStep,
	}, *manyCluster, *manyRounds)
	fmt.Printf("Three brokers, one topic of %d partitions at RF 3. tributary-rf3: ZooKeeper tickTime %v; "+
		"kafka-rf3: Apache Kafka %s KRaft, three nodes each broker and controller, %s heap each, "+
		"its defaults (broker.session.timeout.ms 9 s):\n", *manyCluster, ZooKeeperTick, kafkaVersion(), *manyKafkaHeap)
	WriteManyTable(os.Stdout, rows)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
	}
}
