package compat_test

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A live group of Java 4.4 consumers is rolled member by member from
// group.protocol=classic to consumer and back, as an operator upgrades an
// application and rolls it back, while records keep arriving: the group
// turns into a consumer group when the first consumer-protocol member
// joins and into a classic one when the last leaves, every member ends up
// with partitions, no member loses partitions uncommitted or fails a
// commit, and every record is consumed exactly once, the commits ending at
// the log end.
func TestJavaRollingProtocolUpgradeAndDowngrade(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	const topic, groupName, partitions = "roll", "rolling", 4
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		brokertest.ConsumerGroups(c)
		// Three JVMs share two cores with the race detector: a member
		// must not time out because one paused.
		c.Groups.ConsumerSessionTimeout = 15 * time.Second
		c.Logger = testenv.Logger(t, slog.LevelInfo)
	}))
	brokertest.CreateTopic(t, b.Addr, topic, partitions, nil)

	// Records arrive all along: 10 every 50 ms, round-robin.
	producer := brokertest.NewClient(t, b.Addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var mu sync.Mutex
	produced := 0
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			mu.Lock()
			from := produced
			mu.Unlock()
			var recs []*kgo.Record
			for i := from; i < from+10; i++ {
				recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf("r%06d", i))})
			}
			if err := producer.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Errorf("producing: %v", err)
				return
			}
			mu.Lock()
			produced += 10
			mu.Unlock()
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-stopped
	}()

	adm := kadm.NewClient(brokertest.NewClient(t, b.Addr))
	groupType := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return err.Error()
		}
		return listed[groupName].GroupType
	}
	var members []*testenv.KafkaMember
	start := func(protocol, name string) *testenv.KafkaMember {
		m := testenv.StartKafkaMember(t, b.Addr, groupName, topic, protocol, name)
		members = append(members, m)
		return m
	}
	consumed := func() map[string]int {
		seen := map[string]int{}
		for _, m := range members {
			for _, r := range m.Records() {
				seen[r.Value]++
			}
		}
		return seen
	}
	// settled waits until the group has the type and every live member
	// has partitions and reads what is produced.
	settled := func(step, want string, live ...*testenv.KafkaMember) {
		t.Helper()
		began := time.Now()
		testenv.Eventuallyf(t, 60*time.Second, func() (bool, string) {
			mu.Lock()
			n := produced
			mu.Unlock()
			got := groupType()
			for _, m := range live {
				if !m.Assigned() {
					return false, fmt.Sprintf("%s: %s has no partitions (group type %q)", step, m.Name, got)
				}
			}
			return got == want && len(consumed()) >= n, fmt.Sprintf("%s: group type %q, want %q; %d of %d records consumed", step, got, want, len(consumed()), n)
		})
		t.Logf("%s: group %s, every member reading, %d records so far, settled %v after the new member's JVM started", step, want, len(consumed()), time.Since(began).Round(10*time.Millisecond))
	}
	leave := func(m *testenv.KafkaMember) {
		t.Helper()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}

	c1, c2 := start("classic", "c1"), start("classic", "c2")
	settled("two classic members", "classic", c1, c2)

	leave(c1)
	n1 := start("consumer", "n1")
	settled("upgrade: a consumer-protocol member beside a classic one", "consumer", c2, n1)
	leave(c2)
	n2 := start("consumer", "n2")
	settled("every member on the consumer protocol", "consumer", n1, n2)

	leave(n1)
	c3 := start("classic", "c3")
	settled("rolling back: a classic member in the consumer group", "consumer", n2, c3)
	// Kafka's tools describe the mixed group (ConsumerGroupDescribe).
	described := testenv.RunKafkaTools(t, testenv.KafkaToolRun{Class: testenv.KafkaConsumerGroups, Args: []string{
		"--bootstrap-server", b.Addr, "--describe", "--group", groupName, "--members"}})[0]
	if described.Exit != 0 || !strings.Contains(described.Stdout, "n2") || !strings.Contains(described.Stdout, "c3") {
		t.Errorf("kafka-consumer-groups --describe --members of the mixed group:\n%v", described)
	}
	leave(n2)
	c4 := start("classic", "c4")
	settled("downgrade: the group is classic again", "classic", c3, c4)

	close(stop)
	<-stopped
	mu.Lock()
	total := produced
	mu.Unlock()
	testenv.Eventuallyf(t, 60*time.Second, func() (bool, string) {
		return len(consumed()) == total, fmt.Sprintf("%d of %d records consumed", len(consumed()), total)
	})
	leave(c3)
	leave(c4)
	for v, n := range consumed() {
		if n != 1 {
			t.Errorf("record %s consumed %d times", v, n)
		}
	}
	for _, m := range members {
		for _, p := range m.Problems() {
			t.Errorf("%s", p)
		}
	}
	offs := brokertest.Committed(t, b.Addr, groupName)
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		if o, ok := offs.Lookup(topic, e.Partition); !ok || o.At != e.Offset {
			t.Errorf("partition %d committed at %v, want its end %d", e.Partition, o.At, e.Offset)
		}
	})
	t.Logf("%d records, each consumed once, across an upgrade and a downgrade of the live group", total)
}

// librdkafka 2.16 consumers of both protocols share a live group: a
// classic one (eager range) reads alone, a consumer-protocol one joins
// (upgrade) and both read, it leaves (downgrade) and the classic one reads
// the rest; every record once, no client error.
func TestLibrdkafkaGroupMigration(t *testing.T) {
	testenv.Needs(t, testenv.Python)
	if err := exec.Command("python3", "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatalf("Python's confluent-kafka is missing: python3 -m pip install confluent-kafka (scripts/install-deps.sh does it)")
	}
	const count = 300
	b := testenv.StartBroker(t, testenv.WithConfig(brokertest.ConsumerGroups))
	brokertest.CreateTopic(t, b.Addr, "rd-roll", 4, nil)
	brokertest.ProduceValues(t, b.Addr, "rd-roll", 0, count)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	script := filepath.Join("..", "..", "scripts", "kafka", "librdkafka_migration.py")
	out, err := exec.CommandContext(ctx, "python3", script, b.Addr, "rd-roll", "rd-mixed", fmt.Sprint(count)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := string(out)
	var c2, m2 int
	for _, line := range strings.Split(text, "\n") {
		fmt.Sscanf(line, "phase2 classic %d consumer %d", &c2, &m2)
	}
	if !strings.Contains(text, fmt.Sprintf("consumed %d distinct %d", count, count)) || strings.Contains(text, "error") || c2 == 0 || m2 == 0 {
		t.Fatalf("librdkafka consumers of both protocols in one group:\n%s", text)
	}
	t.Logf("librdkafka:\n%s", text)
}
