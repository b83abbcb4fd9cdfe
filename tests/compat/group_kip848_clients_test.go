package compat_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Two Java 4.4 console consumers with group.protocol=consumer share a
// topic: a leaves after 100 records (max.poll.records=1, so its auto-commit
// on close covers exactly what it printed), c takes its partitions over
// from its commits, and between them every record is printed exactly once.
// A kgo member subscribed to another topic keeps the group live, so that
// kafka-consumer-groups --describe, run after a leaves, always finds
// members to show through ConsumerGroupDescribe (the uniform assignor gives
// members of different subscriptions their own topics).
func TestJavaConsumerProtocolShareAndTakeOver(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	const partitions, total = 4, 400
	b := testenv.StartBroker(t, testenv.WithConfig(brokertest.ConsumerGroups))
	brokertest.CreateTopic(t, b.Addr, "kip848-java", partitions, nil)
	brokertest.ProduceValues(t, b.Addr, "kip848-java", 0, total)
	brokertest.CreateTopic(t, b.Addr, "kip848-side", 1, nil)
	var sideOwned atomic.Int64
	owns := func(delta int) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			sideOwned.Add(int64(delta * len(ps["kip848-side"])))
		}
	}
	sideMember := brokertest.NewClient(t, b.Addr, kgo.ClientID("kgo-side"), kgo.ConsumerGroup("java-848"),
		kgo.ConsumeTopics("kip848-side"), kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.OnPartitionsAssigned(owns(1)), kgo.OnPartitionsRevoked(owns(-1)), kgo.OnPartitionsLost(owns(-1)))
	ctx := t.Context()
	go func() {
		for ctx.Err() == nil {
			sideMember.PollFetches(ctx)
		}
	}()
	testenv.Eventually(t, 30*time.Second, "the kgo member owning its topic", func() bool { return sideOwned.Load() == 1 })
	consumer := func(extra ...string) testenv.KafkaToolRun {
		return testenv.KafkaToolRun{Class: testenv.KafkaConsoleConsumer, Args: append([]string{
			"--bootstrap-server", b.Addr, "--topic", "kip848-java", "--group", "java-848", "--from-beginning",
			"--command-property", "group.protocol=consumer"}, extra...)}
	}
	var first []testenv.KafkaToolResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		first = testenv.RunKafkaTools(t,
			consumer("--max-messages", "100", "--timeout-ms", "60000", "--command-property", "max.poll.records=1"),
			testenv.KafkaToolRun{Class: testenv.KafkaConsumerGroups, Args: []string{
				"--bootstrap-server", b.Addr, "--describe", "--group", "java-848", "--members"}})
	}()
	// The second consumer starts once the first has joined: started
	// together, the second JVM could join first and print every record
	// before the first had any.
	admin := brokertest.NewClient(t, b.Addr)
	testenv.Eventually(t, 60*time.Second, "the first Java consumer to join", func() bool {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"java-848"}
		resp, err := req.RequestWith(t.Context(), admin)
		return err == nil && len(resp.Groups) == 1 && len(resp.Groups[0].Members) >= 2 // kgo-side and the first
	})
	second := testenv.RunKafkaTools(t, consumer("--timeout-ms", "15000"))
	<-done
	if len(first) != 2 || len(second) != 1 {
		t.Fatal("the Java tools did not run")
	}
	printed := func(r testenv.KafkaToolResult) []string {
		var out []string
		for _, line := range strings.Fields(r.Stdout) {
			if strings.HasPrefix(line, "v0") { // produceValues' records
				out = append(out, line)
			}
		}
		return out
	}
	seen := map[string]int{}
	for _, r := range []testenv.KafkaToolResult{first[0], second[0]} {
		for _, v := range printed(r) {
			seen[v]++
		}
	}
	if len(seen) != total {
		t.Errorf("%d distinct records printed, want %d:\n%v\n%v", len(seen), total, first[0], second[0])
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("record %s printed %d times", v, n)
		}
	}
	if n := len(printed(first[0])); n != 100 {
		t.Errorf("the first consumer printed %d records, want 100:\n%v", n, first[0])
	}
	if d := first[1]; d.Exit != 0 || !strings.Contains(d.Stdout, "kgo-side") {
		t.Errorf("kafka-consumer-groups --describe of a consumer-protocol group:\n%v", d)
	} else {
		t.Logf("kafka-consumer-groups --describe --members:\n%s", d.Stdout)
	}
}

// A librdkafka 2.16 consumer with group.protocol=consumer consumes every
// record and commits; it used to wait silently, reading nothing.
func TestLibrdkafkaConsumerProtocol(t *testing.T) {
	testenv.Needs(t, testenv.Python)
	if err := exec.Command("python3", "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatalf("Python's confluent-kafka is missing: python3 -m pip install confluent-kafka (scripts/install-deps.sh does it)")
	}
	b := testenv.StartBroker(t, testenv.WithConfig(brokertest.ConsumerGroups))
	brokertest.CreateTopic(t, b.Addr, "kip848-rd", 2, nil)
	brokertest.ProduceValues(t, b.Addr, "kip848-rd", 0, 200)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := filepath.Join("..", "..", "scripts", "kafka", "librdkafka_consumer_protocol.py")
	out, err := exec.CommandContext(ctx, "python3", script, b.Addr, "kip848-rd", "rd-848", "200").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "consumed 200 distinct 200") || strings.Contains(string(out), "error") {
		t.Fatalf("librdkafka with group.protocol=consumer:\n%s", out)
	}
	offs := brokertest.Committed(t, b.Addr, "rd-848")
	for p := int32(0); p < 2; p++ {
		if o, ok := offs.Lookup("kip848-rd", p); !ok || o.At != 100 {
			t.Errorf("partition %d committed at %v, want 100", p, o.At)
		}
	}
}

// A Java consumer subscribed by pattern (--include; Java resolves a
// java.util.regex pattern itself and sends topic names) reads the matching
// topics and nothing else. TestKgoConsumerProtocolRegex covers a regex the
// coordinator resolves (broker/group_kip848_test.go).
func TestJavaConsumerProtocolRegex(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t, testenv.WithConfig(brokertest.ConsumerGroups))
	for _, topic := range []string{"rx-a", "rx-b", "other"} {
		brokertest.CreateTopic(t, b.Addr, topic, 1, nil)
	}
	brokertest.ProduceValues(t, b.Addr, "rx-a", 0, 10)
	brokertest.ProduceValues(t, b.Addr, "rx-b", 10, 20)
	brokertest.ProduceValues(t, b.Addr, "other", 100, 110)
	res := testenv.RunKafkaTools(t, testenv.KafkaToolRun{Class: testenv.KafkaConsoleConsumer, Args: []string{
		"--bootstrap-server", b.Addr, "--include", "rx-.*", "--group", "java-regex", "--from-beginning",
		"--command-property", "group.protocol=consumer", "--max-messages", "20", "--timeout-ms", "30000"}})
	got := map[string]bool{}
	for _, line := range strings.Fields(res[0].Stdout) {
		if strings.HasPrefix(line, "v0") {
			got[line] = true
		}
	}
	if len(got) != 20 || got["v000100"] {
		t.Errorf("want the 20 records of rx-a and rx-b only, got %d:\n%v", len(got), res[0])
	}
}
