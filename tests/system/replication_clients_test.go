package system_test

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestKafkaClientsRideFailover runs Kafka's own producers against three
// `tributary broker` processes while the leader of the partitions they
// write is killed with SIGKILL: kcat (librdkafka, idempotent, acks=all)
// and Apache Kafka's Java producer (kafka-producer-perf-test, acks=all,
// idempotent by default). Both must finish with exit status 0 and no
// error reported to the application, and every record they were told was
// acknowledged (all of them, then) must be readable exactly once.
func TestKafkaClientsRideFailover(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary, testenv.Kcat, testenv.JVM)
	const javaRecords = 4000
	j := startJepsen(t, 3)
	seeds := strings.Join(j.addrs(), ",")

	// Both write to one partition (the broker places replicas itself), so
	// one kill fails both over.
	const topic = "clients"
	testenv.Run(t, "", 0, "topics", "create", "--brokers", j.addrs()[0], "--partitions", "1", "--replication-factor", "3", topic)
	if !j.waitInSync(topic, 1, 30*time.Second) {
		t.Fatalf("%s-0 is not led with three in-sync replicas", topic)
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(j.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	leader := j.leader(t, topic, 0)

	// kcat writes a line every 10 ms from before the kill until 10 s
	// after it, past the ZooKeeper session timeout.
	kcat := exec.Command("kcat", "-b", seeds, "-t", topic, "-P", "-X", "acks=all", "-X", "enable.idempotence=true",
		"-X", "message.timeout.ms=120000")
	stdin, err := kcat.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var kcatOut testenv.SyncBuffer
	kcat.Stdout, kcat.Stderr = &kcatOut, &kcatOut
	if err := kcat.Start(); err != nil {
		t.Fatalf("starting kcat: %v", err)
	}
	killed := make(chan struct{})
	kcatLines := make(chan int, 1)
	var written atomic.Int64
	go func() {
		w := bufio.NewWriter(stdin)
		n := 0
		var stopAt <-chan time.Time
		for ; ; n++ {
			select {
			case <-killed:
				stopAt, killed = time.After(10*time.Second), nil
			case <-stopAt:
				w.Flush()
				stdin.Close()
				kcatLines <- n
				return
			case <-time.After(10 * time.Millisecond):
			}
			fmt.Fprintf(w, "kcat-%d\n", n)
			w.Flush()
			written.Add(1)
		}
	}()

	// The kill comes once the Java producer is well under way.
	killErr := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			if end, ok := endOffset0(admin, topic); ok && end-written.Load() >= 300 {
				j.brokers[leader].p.Kill()
				close(killed)
				killErr <- nil
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		close(killed)
		killErr <- fmt.Errorf("the Java producer wrote no 300 records within 3 minutes")
	}()

	// 200 records a second: 20 s, the failover in the middle.
	res := testenv.RunKafkaTools(t, testenv.KafkaToolRun{Class: "org.apache.kafka.tools.ProducerPerformance", Args: []string{
		"--topic", topic, "--num-records", strconv.Itoa(javaRecords), "--throughput", "200", "--payload-monotonic",
		"--producer-props", "bootstrap.servers=" + seeds, "acks=all", "enable.idempotence=true", "delivery.timeout.ms=120000",
	}})[0]
	if err := <-killErr; err != nil {
		t.Fatal(err)
	}
	n := <-kcatLines
	kcatErr := kcat.Wait()
	// Both clients log what the kill does to their connections (Java at
	// WARN, kcat as "% ERROR: Local: Broker transport failure") and retry;
	// an application error would be a failed delivery: a stack trace or an
	// ERROR line from the Java producer's callback, "Delivery failed" or a
	// nonzero exit from kcat.
	if res.Exit != 0 || !strings.Contains(res.Stdout, fmt.Sprintf("%d records sent", javaRecords)) {
		t.Errorf("the Java producer did not send every record:\n%s", res)
	}
	for _, line := range strings.Split(strings.TrimSpace(res.Stderr), "\n") {
		if line != "" && !strings.Contains(line, " WARN ") {
			t.Errorf("the Java producer reported an error: %s\n%s", line, res)
			break
		}
	}
	if kcatErr != nil || strings.Contains(strings.ToLower(kcatOut.String()), "delivery failed") ||
		strings.Contains(strings.ToLower(kcatOut.String()), "failed to produce") {
		t.Errorf("kcat: %v\n%s", kcatErr, kcatOut.String())
	}
	if t.Failed() {
		t.FailNow()
	}

	kcatWant := map[string]bool{}
	for i := range n {
		kcatWant[fmt.Sprintf("kcat-%d", i)] = true
	}
	javaWant := map[string]bool{}
	for i := range javaRecords {
		javaWant[strconv.Itoa(i)] = true
	}
	got := readTopic0(t, j.addrs(), topic, int64(len(kcatWant)+len(javaWant)))
	seen := map[string]bool{}
	for _, v := range got {
		if !kcatWant[v] && !javaWant[v] {
			t.Errorf("record %q was never produced", v)
		} else if seen[v] {
			t.Errorf("record %q read twice", v)
		}
		seen[v] = true
	}
	if len(seen) != n+javaRecords {
		t.Errorf("%d of the %d acknowledged records read", len(seen), n+javaRecords)
	}
	t.Logf("kcat: %d lines, Java producer: %d records, acknowledged and read back across the kill of leader %d", n, javaRecords, leader)
}

// endOffset0 is the high watermark of the topic's partition 0.
func endOffset0(cl *kgo.Client, topic string) (int64, bool) {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		return 0, false
	}
	return resp.Topics[0].Partitions[0].Offset, true
}

// readTopic0 reads the values of partition 0 from the start until the
// high watermark, which must reach at least want.
func readTopic0(t *testing.T, seeds []string, topic string, want int64) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	end, _ := endOffset0(cl, topic)
	if end < want {
		t.Fatalf("%s-0 ends at %d, below the %d records acknowledged", topic, end, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []string
	for next := int64(0); next < end; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s-0: read up to offset %d of %d within 60s", topic, next, end)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, string(r.Value))
			next = r.Offset + 1
		})
	}
	return out
}
