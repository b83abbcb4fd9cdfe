package mirror_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// startKafka runs Apache Kafka 4.4 (KRaft, one combined broker+controller
// node) with the bench's launcher, scripts/bench/peer.sh, and returns its
// bootstrap address. Kafka is installed by `make deps`
// (scripts/bench/install-kafka.sh); without it the test fails, it does not
// skip: a source the mirror promises to read must be tested.
func startKafka(t *testing.T) string {
	t.Helper()
	needServices(t)
	home, _ := os.UserHomeDir()
	cache := os.Getenv("TRIBUTARY_BENCH_CACHE")
	if cache == "" {
		cache = filepath.Join(home, ".cache", "tributary-bench")
	}
	if _, err := os.Stat(filepath.Join(cache, "kafka-4.4.0", "libs", "kafka_2.13-4.4.0.jar")); err != nil {
		t.Fatalf("Apache Kafka 4.4.0 is not installed in %s: run make deps (scripts/bench/install-kafka.sh): %v", cache, err)
	}
	port := testenv.FreePorts(t, 2) // the listener and its controller
	dir := t.TempDir()
	script, _ := filepath.Abs("../scripts/bench/peer.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, script, "start", "kafka", dir, fmt.Sprint(port)).CombinedOutput(); err != nil {
		stop := exec.Command(script, "stop", "kafka", dir)
		stop.Run()
		t.Fatalf("starting Apache Kafka: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", "kafka", dir).CombinedOutput(); err != nil {
			t.Logf("stopping Apache Kafka: %v\n%s", err, out)
		}
	})
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// Apache Kafka as the source, reached by its bootstrap address, the mirror
// killed at random moments under a live producer: the Tributary target
// holds every record exactly once, in order, schema ids translated. Kafka's
// own group coordinator assigns the partitions (static membership).
func TestMirrorFromApacheKafkaExactlyOnce(t *testing.T) {
	testenv.Needs(t, testenv.Tributary, testenv.JVM)
	const (
		topic      = "clicks"
		partitions = 8
		kills      = 20
	)
	testenv.Binary(t)
	kafka := startKafka(t)
	dst := testenv.StartBroker(t)
	createTopic(t, []string{kafka}, topic, partitions)
	srcURL, dstURL, srcID := registries(t, topic+"-value")
	stop := liveProducer(t, kafka, "dc1", topic, partitions, srcID)
	args := []string{"--source-registry", "dc1=" + srcURL, "--target-registry", dstURL, "--instance-id", "m1"}
	for k := range kills {
		p, status := mirrorProcess(t, "dc1", kafka, dst.Addr, args...)
		if k%2 == 1 {
			testenv.Eventually(t, time.Minute, "the mirror copies", func() bool {
				st, err := fetchStatus(t, status)
				return err == nil && len(st.Sources) == 1 && len(st.Sources[0].Partitions) == partitions
			})
		}
		time.Sleep(time.Duration(rand.IntN(800)) * time.Millisecond)
		p.Kill()
	}
	counts := stop()
	p, _ := mirrorProcess(t, "dc1", kafka, dst.Addr, args...)
	var n int64
	for _, c := range counts {
		n += int64(c)
	}
	waitForCount(t, []string{dst.Addr}, topic, n, 2*time.Minute)
	time.Sleep(500 * time.Millisecond)
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("mirror did not stop cleanly: %v\n%s", err, p.Output.String())
	}
	dstID := schemaID(t, dstURL, topic+"-value")
	checkExactCopy(t, readTopic(t, []string{kafka}, topic), readTopic(t, []string{dst.Addr}, topic), "dc1", srcID, dstID)
	t.Logf("Apache Kafka source, %d kill -9s: %d records, each exactly once, in order; schema id %d became %d", kills, n, srcID, dstID)
}
