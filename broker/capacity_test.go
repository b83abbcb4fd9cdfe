package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestTopicAndPartitionCaps: CreateTopics and auto-creation beyond
// --max-topics or --max-partitions are refused with POLICY_VIOLATION and a
// message naming the setting; existing topics keep working.
func TestTopicAndPartitionCaps(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.MaxTopics, c.MaxPartitions = 3, 10
	}))
	adm := kadm.NewClient(newClient(t, b.Addr))
	ctx := context.Background()
	create := func(name string, partitions int32) kadm.CreateTopicResponse {
		t.Helper()
		resp, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
		if err != nil && resp.Err == nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		return resp
	}
	if r := create("a", 8); r.Err != nil {
		t.Fatalf("a: %v", r.Err)
	}
	r := create("b", 3)
	if !errors.Is(r.Err, kerr.PolicyViolation) || !strings.Contains(r.ErrMessage, "--max-partitions (now 10)") {
		t.Fatalf("8+3 partitions under a cap of 10: %v %q, want POLICY_VIOLATION naming --max-partitions", r.Err, r.ErrMessage)
	}
	if r := create("b", 2); r.Err != nil {
		t.Fatalf("b: %v", r.Err)
	}

	b2 := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.MaxTopics = 2 }))
	adm2 := kadm.NewClient(newClient(t, b2.Addr))
	for _, name := range []string{"x", "y"} {
		if resp, err := adm2.CreateTopic(ctx, 1, 1, nil, name); err != nil || resp.Err != nil {
			t.Fatalf("%s: %v %v", name, err, resp.Err)
		}
	}
	resp, err := adm2.CreateTopic(ctx, 1, 1, nil, "z")
	if !errors.Is(err, kerr.PolicyViolation) || !errors.Is(resp.Err, kerr.PolicyViolation) || !strings.Contains(resp.ErrMessage, "--max-topics (now 2)") {
		t.Fatalf("third topic under --max-topics=2: %v %v %q", err, resp.Err, resp.ErrMessage)
	}
	// Auto-creation is refused the same way; the existing topic still works.
	prod := newClient(t, b2.Addr, kgo.AllowAutoTopicCreation(), kgo.RecordRetries(1))
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("auto-creating past the cap: %v, want POLICY_VIOLATION", err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "x", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("producing to an existing topic at the cap: %v", err)
	}
}
