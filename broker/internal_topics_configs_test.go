package broker_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestSchemasTopicMigratedInCluster: in a cluster the topic configs live
// in ZooKeeper; a _schemas whose configs there are the old ones
// (cleanup.policy=delete, retention.ms=-1) is migrated to compact when a
// broker starts, with one log line, and every broker reports compact.
func TestSchemasTopicMigratedInCluster(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 2)
	createTopic(t, brokers[0].Addr, "_schemas", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, addr := brokers[0].DataDir, brokers[0].Addr
	brokers[0].Stop()

	// Set the old configs in ZooKeeper, as an earlier Tributary left them,
	// through a cluster member that stands in for that version.
	old, err := cluster.JoinZooKeeper(ctx, connect, cluster.Broker{ID: 99, Host: "127.0.0.1", Port: 1}, testenv.Logger(t, slog.LevelWarn))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.SetTopicConfigs(ctx, "_schemas", map[string]string{"cleanup.policy": "delete", "retention.ms": "-1"}); err != nil {
		t.Fatal(err)
	}
	old.Close()
	testenv.Eventually(t, 20*time.Second, "broker 2 to see the old configs", func() bool {
		return describedConfig(t, brokers[1].Addr, "_schemas", "cleanup.policy") == "delete"
	})

	var logs testenv.SyncBuffer
	restarted := testenv.StartClusterBroker(t, connect, 1, testenv.WithDataDir(dir), testenv.WithAddr(addr),
		testenv.WithConfig(func(c *broker.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) }))
	if n := strings.Count(logs.String(), "internal topic migrated"); n != 1 {
		t.Errorf("%d log lines about the migration, want 1:\n%s", n, logs.String())
	}
	for _, b := range []*testenv.Broker{restarted, brokers[1]} {
		testenv.Eventually(t, 20*time.Second, "compact on broker "+b.Addr, func() bool {
			return describedConfig(t, b.Addr, "_schemas", "cleanup.policy") == "compact"
		})
	}
}

// describedConfig is one config of topic as DescribeConfigs at addr reports it.
func describedConfig(t *testing.T, addr, topic, key string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{key}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), newClient(t, addr))
	if err != nil || len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 1 {
		t.Fatalf("DescribeConfigs %s %s: %v %+v", topic, key, err, resp)
	}
	return kmsgValue(resp.Resources[0].Configs[0].Value)
}

func kmsgValue(v *string) string {
	if v == nil {
		return ""
	}
	return *v
}

// TestInternalTopicConfigsHeldOnAlter: AlterConfigs and
// IncrementalAlterConfigs cannot take _schemas off its required configs
// (a retention would lose schemas); setting other configs keeps them.
func TestInternalTopicConfigsHeldOnAlter(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "_schemas", 1, nil)
	adm, _ := newAdmin(t, b.Addr)
	for _, c := range []kadm.AlterConfig{set("cleanup.policy", "delete"), set("retention.ms", "3600000")} {
		if err := alterTopic(t, adm, "_schemas", c); !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), "internal") {
			t.Errorf("%s=%s on _schemas: %v, want INVALID_CONFIG saying the topic is internal", c.Name, *c.Value, err)
		}
	}
	// The legacy AlterConfigs replaces every config: the required ones
	// come back filled in.
	rs, err := adm.AlterTopicConfigsState(context.Background(), []kadm.AlterConfig{set("segment.bytes", "1048576")}, "_schemas")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.On("_schemas", nil); r.Err != nil {
		t.Fatalf("segment.bytes on _schemas: %v %s", r.Err, r.ErrMessage)
	}
	for key, want := range map[string]string{"cleanup.policy": "compact", "retention.ms": "-1", "segment.bytes": "1048576"} {
		if got := describedConfig(t, b.Addr, "_schemas", key); got != want {
			t.Errorf("_schemas %s=%q after AlterConfigs, want %s", key, got, want)
		}
	}
}
