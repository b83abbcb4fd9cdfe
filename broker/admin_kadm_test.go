package broker_test

// Admin APIs through franz-go's kadm, the way a Go operator tool uses them:
// CreateTopics' configs, DescribeConfigs, IncrementalAlterConfigs,
// AlterConfigs, CreatePartitions, DeleteRecords, OffsetDelete,
// DescribeLogDirs and ListOffsets by max timestamp.

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

func TestCreateTopicsAnswersWithConfigs(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Log.SegmentBytes = 1 << 20 }))
	_, cl := newAdmin(t, b.Addr)
	ctx := context.Background()

	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "with-configs", 2, 1
	rc := kmsg.NewCreateTopicsRequestTopicConfig()
	rc.Name, rc.Value = "retention.ms", kmsg.StringPtr("60000")
	rt.Configs = append(rt.Configs, rc)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	st := resp.Topics[0]
	wantCode(t, "CreateTopics", st.ErrorCode, nil)
	if st.Configs == nil {
		t.Fatal("CreateTopics answered without the topic's configs; Java's Admin client fails on that")
	}
	got := map[string]kmsg.CreateTopicsResponseTopicConfig{}
	for _, c := range st.Configs {
		got[c.Name] = c
	}
	for name, want := range map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"retention.ms":   {"60000", kmsg.ConfigSourceDynamicTopicConfig},
		"segment.bytes":  {"1048576", kmsg.ConfigSourceStaticBrokerConfig},
		"cleanup.policy": {"delete", kmsg.ConfigSourceDefaultConfig},
	} {
		c, ok := got[name]
		if !ok || c.Value == nil || *c.Value != want.value || kmsg.ConfigSource(c.Source) != want.source {
			t.Errorf("config %s: got %+v, want value %s source %v", name, c, want.value, want.source)
		}
	}
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr)
	ctx := context.Background()
	res, err := adm.ValidateCreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": kmsg.StringPtr("1000")}, "dry-run")
	if err != nil || res["dry-run"].Err != nil {
		t.Fatalf("validate-only create: %v %v", err, res["dry-run"].Err)
	}
	if res["dry-run"].NumPartitions != 3 || len(res["dry-run"].Configs) == 0 {
		t.Errorf("validate-only answer: %+v", res["dry-run"])
	}
	details, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if details.Has("dry-run") {
		t.Error("validate_only created the topic")
	}
	bad, _ := adm.ValidateCreateTopics(ctx, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("shred")}, "dry-bad")
	if bad["dry-bad"].Err == nil {
		t.Error("validate_only accepted cleanup.policy=shred")
	}
}
