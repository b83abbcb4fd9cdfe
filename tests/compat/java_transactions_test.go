package compat_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// Apache Kafka 4.4's Java transactional producer commits six transactions
// and aborts three (scripts/kafka/JavaTransactions.java), and Java
// consumers read them back: at read_committed exactly the committed
// records, each once, none of an aborted transaction; at read_uncommitted
// every record, as from Kafka.
func TestJavaTransactionalProducerAndReadCommittedConsumer(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	const topic = "java-rc"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	out := testenv.RunJavaTransactions(t, "produce", b.Addr, topic, "java-app", "9")
	var committed, all []string
	for i := range 9 {
		outcome := "COMMITTED"
		if i%3 == 2 {
			outcome = "ABORTED"
		}
		if !strings.Contains(out, fmt.Sprintf("%s %d\n", outcome, i)) {
			t.Fatalf("the producer did not report %s %d:\n%s", outcome, i, out)
		}
		for j := range 10 {
			v := fmt.Sprintf("t%d-%d", i, j)
			all = append(all, v)
			if outcome == "COMMITTED" {
				committed = append(committed, v)
			}
		}
	}
	for _, c := range []struct {
		isolation string
		want      []string
	}{{"read_committed", committed}, {"read_uncommitted", all}} {
		out := testenv.RunJavaTransactions(t, "consume", b.Addr, topic, c.isolation, fmt.Sprint(len(c.want)))
		var got []string
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(line, "VALUE "); ok {
				got = append(got, v)
			}
		}
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("a Java consumer at %s read %d records, want %d:\n got %v\nwant %v", c.isolation, len(got), len(want), got, want)
		}
	}
}

// A zombie Java producer is fenced: a second instance with the same
// transactional id starts while the first has records in an open
// transaction; the first's commit fails with ProducerFencedException, its
// records are aborted, and the second's commit is what read_committed
// consumers read.
func TestJavaZombieProducerIsFenced(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	const topic = "java-fenced"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	out := testenv.RunJavaTransactions(t, "fence", b.Addr, topic, "java-zombie", "0")
	if !strings.Contains(out, "FENCED\n") || !strings.Contains(out, "COMMITTED successor\n") {
		t.Fatalf("the zombie was not fenced, or its successor did not commit:\n%s", out)
	}
	out = testenv.RunJavaTransactions(t, "consume", b.Addr, topic, "read_committed", "5")
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "VALUE "); ok {
			got = append(got, v)
		}
	}
	if want := []string{"successor-0", "successor-1", "successor-2", "successor-3", "successor-4"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want only the successor's %v", got, want)
	}
}
