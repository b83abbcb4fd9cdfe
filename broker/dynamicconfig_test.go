package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// alterBroker changes dynamic broker configs: the cluster-wide default
// without ids, else those brokers' own.
func alterBroker(t *testing.T, adm *kadm.Client, cs []kadm.AlterConfig, ids ...int32) error {
	t.Helper()
	rs, err := adm.AlterBrokerConfigs(context.Background(), cs, ids...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil {
			return errors.Join(r.Err, errors.New(r.ErrMessage))
		}
	}
	return nil
}

func startOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	offs, err := adm.ListStartOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := offs.Lookup(topic, 0)
	return o.Offset
}

func TestDynamicDefaultRetentionAppliesWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	opts := []testenv.BrokerOption{testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.Log.SegmentBytes = 1024 // every 600-byte record rolls a segment
		c.Log.RetentionCheckInterval = 20 * time.Millisecond
	})}
	b := testenv.StartBroker(t, opts...)
	adm, _ := newAdmin(t, b.Addr)
	ctx := context.Background()
	createTopic(t, b.Addr, "inherits", 1, nil)
	createTopic(t, b.Addr, "keeps", 1, map[string]*string{"retention.ms": kmsg.StringPtr("604800000")})
	cl := newClient(t, b.Addr)
	old := time.Now().Add(-2 * time.Hour)
	for _, topic := range []string{"inherits", "keeps"} {
		for _, ts := range []time.Time{old, old, time.Now()} {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: randomBytes(600), Timestamp: ts}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if o := startOffset(t, adm, "inherits"); o != 0 {
		t.Fatalf("start offset %d before any change, want 0", o)
	}

	// The cluster-wide default reaches the open partition of the topic
	// that sets no retention of its own.
	if err := alterBroker(t, adm, []kadm.AlterConfig{set("log.retention.ms", "3600000")}); err != nil {
		t.Fatalf("altering the default broker configs: %v", err)
	}
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		o := startOffset(t, adm, "inherits")
		return o == 2, "start offset of inherits: " + strconv.FormatInt(o, 10)
	})
	if o := startOffset(t, adm, "keeps"); o != 0 {
		t.Errorf("topic with its own retention.ms trimmed to %d by the broker default", o)
	}
	wantConfig(t, "topic inheriting", topicConfig(t, adm, "inherits", "retention.ms"), "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	wantConfig(t, "topic overriding", topicConfig(t, adm, "keeps", "retention.ms"), "604800000", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, "default resource", brokerConfigs(t, adm)["log.retention.ms"], "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	own := brokerConfigs(t, adm, 0)
	wantConfig(t, "broker 0", own["log.retention.ms"], "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	wantConfig(t, "broker 0", own["log.segment.bytes"], "1024", kmsg.ConfigSourceStaticBrokerConfig)
	wantConfig(t, "broker 0", own["log.flush.interval.messages"], "10000", kmsg.ConfigSourceDefaultConfig)
	if c := own["log.retention.ms"]; len(c.Synonyms) != 2 ||
		c.Synonyms[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || c.Synonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("log.retention.ms synonyms %+v, want the dynamic default then the built-in", c.Synonyms)
	}

	// A broker's own value overrides the default, in hours as well.
	if err := alterBroker(t, adm, []kadm.AlterConfig{set("log.retention.hours", "5")}, 0); err != nil {
		t.Fatal(err)
	}
	wantConfig(t, "broker 0 after its own", brokerConfigs(t, adm, 0)["log.retention.ms"], "18000000", kmsg.ConfigSourceDynamicBrokerConfig)
	wantConfig(t, "broker 0 after its own", brokerConfigs(t, adm, 0)["log.retention.hours"], "5", kmsg.ConfigSourceDynamicBrokerConfig)
	wantConfig(t, "topic after broker's own", topicConfig(t, adm, "inherits", "retention.ms"), "18000000", kmsg.ConfigSourceDynamicBrokerConfig)
	if _, ok := brokerConfigs(t, adm)["log.retention.hours"]; ok {
		t.Error("the default resource reports a broker's own value")
	}

	// Both persist across a restart; deleting the broker's own goes
	// back to the default.
	b.Stop()
	if _, err := os.Stat(filepath.Join(dir, "broker-configs.json")); err != nil {
		t.Fatal(err)
	}
	b2 := testenv.StartBroker(t, opts...)
	adm2, _ := newAdmin(t, b2.Addr)
	wantConfig(t, "after a restart", topicConfig(t, adm2, "inherits", "retention.ms"), "18000000", kmsg.ConfigSourceDynamicBrokerConfig)
	if err := alterBroker(t, adm2, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "log.retention.hours"}}, 0); err != nil {
		t.Fatal(err)
	}
	wantConfig(t, "after deleting broker 0's own", brokerConfigs(t, adm2, 0)["log.retention.ms"], "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
}

func TestDynamicBrokerConfigsRefused(t *testing.T) {
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr)
	for _, c := range []kadm.AlterConfig{set("log.dirs", "/tmp/x"), set("num.partitions", "3"), set("no.such.setting", "1")} {
		err := alterBroker(t, adm, []kadm.AlterConfig{c})
		if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), c.Name) || !strings.Contains(err.Error(), "static") {
			t.Errorf("%s: %v, want INVALID_CONFIG naming the key as static", c.Name, err)
		}
	}
	for _, c := range []kadm.AlterConfig{set("log.retention.ms", "soon"), set("compression.type", "brotli"), set("max.connections", "0")} {
		err := alterBroker(t, adm, []kadm.AlterConfig{c}, 0)
		if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), c.Name) {
			t.Errorf("%s=%s: %v, want INVALID_CONFIG naming the key", c.Name, *c.Value, err)
		}
	}
	rs, err := adm.ValidateAlterBrokerConfigs(context.Background(), []kadm.AlterConfig{set("log.segment.bytes", "2048")})
	if err != nil || rs[0].Err != nil {
		t.Fatal(err, rs)
	}
	wantConfig(t, "after validate_only", brokerConfigs(t, adm, 0)["log.segment.bytes"], "1073741824", kmsg.ConfigSourceDefaultConfig)
	if got := brokerConfigs(t, adm); len(got) != 0 {
		t.Errorf("default resource holds %v after refusals only", got)
	}

	// AlterConfigs (not incremental) replaces the whole set.
	ctx := context.Background()
	for _, cs := range [][]kadm.AlterConfig{{set("log.segment.bytes", "2048"), set("log.roll.ms", "60000")}, {set("log.roll.hours", "2")}} {
		if rs, err := adm.AlterBrokerConfigsState(ctx, cs); err != nil || rs[0].Err != nil {
			t.Fatal(err, rs)
		}
	}
	got := brokerConfigs(t, adm, 0)
	wantConfig(t, "after AlterConfigs", got["log.roll.ms"], "7200000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	wantConfig(t, "after AlterConfigs", got["log.segment.bytes"], "1073741824", kmsg.ConfigSourceDefaultConfig)
}

func TestDynamicConnectionLimit(t *testing.T) {
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr) // connects from 127.0.0.1
	if err := alterBroker(t, adm, []kadm.AlterConfig{set("max.connections.per.ip", "1")}); err != nil {
		t.Fatal(err)
	}
	dialFrom(t, "127.0.0.2", b.Addr).roundTrip(kmsg.NewPtrApiVersionsRequest())
	if !dialFrom(t, "127.0.0.2", b.Addr).closedByBroker() {
		t.Fatal("a second connection from one IP was served after max.connections.per.ip=1")
	}
	dialFrom(t, "127.0.0.3", b.Addr).roundTrip(kmsg.NewPtrApiVersionsRequest())
}

// The checks Produce makes read the dynamic defaults as they are now.
func TestDynamicProduceLimits(t *testing.T) {
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr)
	createTopic(t, b.Addr, "limits", 1, nil)
	cl := newClient(t, b.Addr, kgo.DefaultProduceTopic("limits"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(5*time.Second))
	ctx := context.Background()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: randomBytes(3000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := alterBroker(t, adm, []kadm.AlterConfig{set("message.max.bytes", "2000")}); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: randomBytes(3000)}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("3000-byte record after message.max.bytes=2000: %v, want MESSAGE_TOO_LARGE", err)
	}
	if err := alterBroker(t, adm, []kadm.AlterConfig{set("min.insync.replicas", "2")}, 0); err != nil {
		t.Fatal(err)
	}
	// Asked on the wire: kgo retries NOT_ENOUGH_REPLICAS, and its
	// idempotent producer then waits for an epoch bump until the record's
	// delivery timeout, so what it reports depends on timing.
	resp := dial(t, b.Addr).roundTrip(produceRequest(9, -1, "limits", 0, makeBatch(-1, -1, -1, "x")))
	if code := produceResult(resp).ErrorCode; code != kerr.NotEnoughReplicas.Code {
		t.Errorf("acks=all to one replica after min.insync.replicas=2: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(code))
	}
}

func TestDynamicBrokerConfigsReachEveryBrokerOfACluster(t *testing.T) {
	_, brokers := testenv.StartCluster(t, 2)
	adm, _ := newAdmin(t, brokers[0].Addr)
	if r, err := adm.CreateTopic(context.Background(), 2, 1, nil, "cl-dynb"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	if err := alterBroker(t, adm, []kadm.AlterConfig{set("log.retention.ms", "120000")}); err != nil {
		t.Fatal(err)
	}
	// Broker 2's own value, sent to it through the same client.
	if err := alterBroker(t, adm, []kadm.AlterConfig{set("log.segment.bytes", "4096")}, 2); err != nil {
		t.Fatal(err)
	}
	adm2, _ := newAdmin(t, brokers[1].Addr)
	testenv.Eventuallyf(t, 10*time.Second, func() (bool, string) {
		c := brokerConfigs(t, adm2, 2)
		r, s := c["log.retention.ms"], c["log.segment.bytes"]
		return valueOf(r) == "120000" && r.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig &&
				valueOf(s) == "4096" && s.Source == kmsg.ConfigSourceDynamicBrokerConfig,
			"broker 2: log.retention.ms=" + valueOf(r) + " log.segment.bytes=" + valueOf(s)
	})
	wantConfig(t, "broker 1 keeps its segment size", brokerConfigs(t, adm, 1)["log.segment.bytes"], "1073741824", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, "topic on broker 2", topicConfig(t, adm2, "cl-dynb", "retention.ms"), "120000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
}
