package registry_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/tributary-io/tributary/schema/registry"
)

// topicConfig is one effective config of topic as DescribeConfigs reports it.
func topicConfig(t *testing.T, addr, topic, key string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("configs of %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue()
		}
	}
	return ""
}

// registered is a schema a registry acknowledged.
type registered struct {
	subject string
	version int
	id      int
	schema  string
}

func registerSome(t *testing.T, n *srtest.Registry) []registered {
	t.Helper()
	ctx := context.Background()
	var all []registered
	for i := range 6 {
		subject := fmt.Sprintf("s%d", i%2)
		if r := n.Client.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, subject); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		schema := rec(fmt.Sprintf("f%d:string", i))
		ss, err := n.Client.CreateSchema(ctx, subject, sr.Schema{Schema: schema})
		if err != nil {
			t.Fatalf("register: %v", err)
		}
		all = append(all, registered{subject, ss.Version, ss.ID, schema})
	}
	return all
}

func checkServes(t *testing.T, n *srtest.Registry, all []registered) {
	t.Helper()
	ctx := context.Background()
	for _, a := range all {
		got, err := n.Client.SchemaByVersion(ctx, a.subject, a.version)
		if err != nil || got.ID != a.id || got.Schema.Schema != a.schema {
			t.Errorf("%s v%d: id %d %q (%v), want id %d %q", a.subject, a.version, got.ID, got.Schema.Schema, err, a.id, a.schema)
		}
		if s, err := n.Client.SchemaByID(ctx, a.id); err != nil || s.Schema != a.schema {
			t.Errorf("id %d: %q (%v), want %q", a.id, s.Schema, err, a.schema)
		}
	}
}

// TestSchemasTopicMigratedToCompactOnRestart: a data directory whose
// _schemas was created before the topic became compacted
// (cleanup.policy=delete, retention.ms=-1) is migrated when the broker
// starts on it, with one log line; DescribeConfigs then reports compact,
// and a registry serves every schema registered before.
func TestSchemasTopicMigratedToCompactOnRestart(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := registry.New(ctx, registry.Config{Bootstrap: []string{b.Addr}, Logger: srtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	node := srtest.Serve(t, srv)
	all := registerSome(t, node)
	srv.Close()
	b.Stop()

	// The configs an earlier Tributary gave _schemas, set in the data
	// directory's topic registry as that version left it.
	meta, err := cluster.OpenStandalone(dir, cluster.Broker{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := meta.SetTopicConfigs(ctx, "_schemas", map[string]string{"cleanup.policy": "delete", "retention.ms": "-1"}); err != nil {
		t.Fatal(err)
	}
	meta.Close()

	var logs testenv.SyncBuffer
	b = testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}))
	if got := topicConfig(t, b.Addr, "_schemas", "cleanup.policy"); got != "compact" {
		t.Fatalf("after restart _schemas has cleanup.policy=%q, want compact", got)
	}
	if got := topicConfig(t, b.Addr, "_schemas", "retention.ms"); got != "-1" {
		t.Errorf("after restart _schemas has retention.ms=%q, want -1", got)
	}
	if n := strings.Count(logs.String(), "migrated"); n != 1 {
		t.Errorf("%d log lines about the migration, want 1:\n%s", n, logs.String())
	}

	srv, err = registry.New(ctx, registry.Config{Bootstrap: []string{b.Addr}, Logger: srtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	checkServes(t, srtest.Serve(t, srv), all)

	// A second restart has nothing left to migrate.
	b.Stop()
	var again testenv.SyncBuffer
	b = testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&again, nil))
	}))
	if got := topicConfig(t, b.Addr, "_schemas", "cleanup.policy"); got != "compact" {
		t.Errorf("after a second restart _schemas has cleanup.policy=%q, want compact", got)
	}
	if strings.Contains(again.String(), "migrated") {
		t.Errorf("a second restart migrated again:\n%s", again.String())
	}
}

// TestRegistryMigratesItsTopicToCompact: a registry whose topic exists
// with the old configs (another name than _schemas, which the broker does
// not know as its own) makes it compacted when it starts, and serves what
// was registered on it.
func TestRegistryMigratesItsTopicToCompact(t *testing.T) {
	broker, topic := testBroker(t), uniqueTopic(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1,
		map[string]*string{"cleanup.policy": kmsg.StringPtr("delete"), "retention.ms": kmsg.StringPtr("-1")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("creating %s with the old configs: %v %v", topic, err, resp.Err)
	}
	first := kafkaNode(t, broker, topic)
	if got := topicConfig(t, broker, topic, "cleanup.policy"); got != "compact" {
		t.Fatalf("after the registry started, %s has cleanup.policy=%q, want compact", topic, got)
	}
	all := registerSome(t, first)
	checkServes(t, kafkaNode(t, broker, topic), all)
}
