package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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

func alterTopic(t *testing.T, adm *kadm.Client, topic string, cs ...kadm.AlterConfig) error {
	t.Helper()
	rs, err := adm.AlterTopicConfigs(context.Background(), cs, topic)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := rs.On(topic, nil)
	if r.Err != nil {
		return errors.Join(r.Err, errors.New(r.ErrMessage))
	}
	return nil
}

func set(name, value string) kadm.AlterConfig {
	return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(value)}
}

func TestAlterTopicConfigsAppliesAndPersists(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	adm, _ := newAdmin(t, b.Addr)
	ctx := context.Background()
	createTopic(t, b.Addr, "dyn", 1, nil)
	cl := newClient(t, b.Addr, kgo.DefaultProduceTopic("dyn"))
	// The partition is open before the change: it must take it as it runs.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if err := alterTopic(t, adm, "dyn", set("segment.bytes", "1024"), set("retention.ms", "3600000"),
		set("max.message.bytes", "2000"), set("message.timestamp.type", "LogAppendTime")); err != nil {
		t.Fatalf("altering configs: %v", err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "dyn")
	if err != nil {
		t.Fatal(err)
	}
	got := configsByName(t, rcs, "dyn")
	for name, want := range map[string]string{"segment.bytes": "1024", "retention.ms": "3600000", "max.message.bytes": "2000", "message.timestamp.type": "LogAppendTime"} {
		c := got[name]
		if c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("%s: value %v source %v, want %s from the topic", name, valueOf(c), c.Source, want)
		}
	}
	if c := got["flush.messages"]; c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("flush.messages source %v, want DEFAULT_CONFIG", c.Source)
	}

	// Applied to the open partition: small segments, the broker's clock,
	// and the size limit.
	for range 4 {
		r := &kgo.Record{Value: randomBytes(600), Timestamp: time.UnixMilli(1000)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "dyn-0", "*.log")); len(logs) < 4 {
		t.Errorf("%d segments after four 600-byte batches with segment.bytes=1024, want 4", len(logs))
	}
	recs := consumeAll(t, b.Addr, "dyn", 5)[0]
	if recs[1].Timestamp.UnixMilli() == 1000 || recs[1].Attrs.TimestampType() != 1 {
		t.Errorf("record timestamp %v type %d: want the broker's append time (type 1)", recs[1].Timestamp, recs[1].Attrs.TimestampType())
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Value: randomBytes(3000)}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("3000-byte record with max.message.bytes=2000: %v, want MESSAGE_TOO_LARGE", err)
	}

	// Refused values name the key; nothing changes.
	err = alterTopic(t, adm, "dyn", set("cleanup.policy", "shred"))
	if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), "cleanup.policy") {
		t.Errorf("cleanup.policy=shred: %v, want INVALID_CONFIG naming the key", err)
	}
	if err := alterTopic(t, adm, "dyn", set("no.such.config", "1")); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("unknown key: %v, want INVALID_CONFIG", err)
	}

	// DELETE goes back to the default; the rest survives a restart.
	if err := alterTopic(t, adm, "dyn", kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "max.message.bytes"}); err != nil {
		t.Fatal(err)
	}
	b.Stop()
	b2 := testenv.StartBroker(t, testenv.WithDataDir(dir))
	adm2, _ := newAdmin(t, b2.Addr)
	rcs, err = adm2.DescribeTopicConfigs(ctx, "dyn")
	if err != nil {
		t.Fatal(err)
	}
	got = configsByName(t, rcs, "dyn")
	if c := got["retention.ms"]; valueOf(c) != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("after a restart retention.ms = %s (%v)", valueOf(c), c.Source)
	}
	if c := got["max.message.bytes"]; c.Source == kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("deleted max.message.bytes still set by the topic: %s", valueOf(c))
	}

	// AlterConfigs (not incremental) replaces the whole set.
	rs, err := adm2.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "flush.messages", Value: kmsg.StringPtr("5")}}, "dyn")
	if err != nil || rs[0].Err != nil {
		t.Fatal(err, rs)
	}
	rcs, _ = adm2.DescribeTopicConfigs(ctx, "dyn")
	got = configsByName(t, rcs, "dyn")
	if valueOf(got["flush.messages"]) != "5" || got["retention.ms"].Source == kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("AlterConfigs did not replace the set: flush.messages=%s retention.ms from %v", valueOf(got["flush.messages"]), got["retention.ms"].Source)
	}
	if _, err := os.Stat(filepath.Join(dir, "topics.json")); err != nil {
		t.Error(err)
	}
}

func TestDescribeBrokerConfigs(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Log.FlushInterval = 50 * time.Millisecond }))
	adm, _ := newAdmin(t, b.Addr)
	rcs, err := adm.DescribeBrokerConfigs(context.Background(), 0)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("%v %+v", err, rcs)
	}
	got := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		got[c.Key] = c
	}
	if c := got["log.flush.interval.ms"]; c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("log.flush.interval.ms (set by a flag) source %v, want STATIC_BROKER_CONFIG", c.Source)
	}
	if c := got["log.segment.bytes"]; valueOf(c) != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("log.segment.bytes = %s from %v, want the default", valueOf(c), c.Source)
	}
	rs, err := adm.AlterBrokerConfigs(context.Background(), []kadm.AlterConfig{set("log.flush.interval.ms", "1")}, 0)
	if err != nil || len(rs) != 1 || rs[0].Err != nil {
		t.Fatalf("altering a dynamic broker setting: %v %+v", err, rs)
	}
	if c := brokerConfigs(t, adm, 0)["log.flush.interval.ms"]; valueOf(c) != "1" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("log.flush.interval.ms = %s from %v, want 1 from the broker's dynamic configs", valueOf(c), c.Source)
	}
	rs, err = adm.AlterBrokerConfigs(context.Background(), []kadm.AlterConfig{set("socket.request.max.bytes", "1")}, 0)
	if err != nil || len(rs) != 1 || !errors.Is(rs[0].Err, kerr.InvalidConfig) {
		t.Errorf("altering a static broker setting: %v %+v, want INVALID_CONFIG", err, rs)
	}
}

func TestAlterConfigsReachesEveryBrokerOfACluster(t *testing.T) {
	_, brokers := testenv.StartCluster(t, 2)
	adm, _ := newAdmin(t, brokers[0].Addr)
	if r, err := adm.CreateTopic(context.Background(), 2, 1, nil, "cl-dyn"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	if err := alterTopic(t, adm, "cl-dyn", set("retention.ms", "120000")); err != nil {
		t.Fatal(err)
	}
	adm2, _ := newAdmin(t, brokers[1].Addr)
	testenv.Eventually(t, 10*time.Second, "the other broker reports the new config", func() bool {
		rcs, err := adm2.DescribeTopicConfigs(context.Background(), "cl-dyn")
		if err != nil || len(rcs) == 0 || rcs[0].Err != nil {
			return false
		}
		for _, c := range rcs[0].Configs {
			if c.Key == "retention.ms" {
				return valueOf(c) == "120000"
			}
		}
		return false
	})
}

func valueOf(c kadm.Config) string { return c.MaybeValue() }
