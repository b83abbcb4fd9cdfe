package broker_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Refused features, with the clients that met them. A transactional Java
// producer fails at once with Tributary's reason (FindCoordinator v4+ gets
// INVALID_REQUEST, whose message Java shows; TRANSACTIONAL_ID_AUTHORIZATION_
// FAILED read as an ACL problem). The broker logs one line per feature, not
// one per refusal, naming it. (The consumer group protocol, once refused
// here, is served: group_kip848_test.go.)
func TestRefusedFeaturesWithJavaClients(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	logs := &lockedBuffer{}
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Logger = warnRecorder(logs) }))
	createTopic(t, b.Addr, "refusals", 1, nil)
	res := testenv.RunKafkaTools(t,
		testenv.KafkaToolRun{Class: "org.apache.kafka.tools.ProducerPerformance", Args: []string{
			"--topic", "refusals", "--num-records", "1", "--record-size", "10", "--throughput", "-1",
			"--transactional-id", "app-1", "--producer-props", "bootstrap.servers=" + b.Addr, "max.block.ms=20000"}},
	)
	if r := res[0]; r.Exit == 0 || !strings.Contains(r.Stdout+r.Stderr, "does not support Kafka transactions") {
		t.Errorf("want the transactional producer to fail with Tributary's reason:\n%v", r)
	}
	out := logs.String()
	for _, feature := range []string{`feature=transactions`} {
		if n := strings.Count(out, feature); n != 1 {
			t.Errorf("%s logged %d times, want once:\n%s", feature, n, out)
		}
	}
}

// warnRecorder is a broker logger that keeps WARN and ERROR lines.
func warnRecorder(w *lockedBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
