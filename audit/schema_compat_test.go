package audit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/schema"
)

// An audit topic written by an older Tributary, whose monitoring schema
// had neither the counts' "distinct" nor the events' "latency": the
// registry takes the new schema as a compatible version, a new publisher
// publishes beside the old events, and the reconciler reads both (the old
// ones with the fields' defaults).
func TestOldMonitoringEventsStillRead(t *testing.T) {
	env := audittest.Start(t)
	w := pastWindows(1)[0]

	old := oldMonitoringSchema(t)
	ser, err := schema.NewSerializer(env.Registry, schema.SerializerConfig{Schema: old, Service: "tributary-audit", Server: "old"})
	if err != nil {
		t.Fatal(err)
	}
	e := &audit.Event{Published: w.Add(11 * time.Minute), Host: "old", Tier: audit.TierProducer, Source: "old/1", Publisher: "old/1",
		Sequence: 1, Final: true, Window: w, Size: audit.DefaultWindow, Counts: []audit.Count{{Topic: "pageview", Server: "fe-1", N: 30}}}
	e.ID[0] = 1
	n := audit.EventNative(e)
	delete(n, "latency")
	for _, c := range n["counts"].([]any) {
		delete(c.(map[string]any), "distinct")
	}
	v, err := ser.Serialize(context.Background(), audit.DefaultTopic, n)
	if err != nil {
		t.Fatalf("an event of the old monitoring schema: %v", err)
	}
	cl := audittest.Client(t, env.Broker.Addr, kgo.ClientID(audit.ClientID))
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: audit.DefaultTopic, Value: v}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, env.Broker.Addr), Registry: env.Registry, Host: "new"})
	if err != nil {
		t.Fatal(err)
	}
	pub.CountN("pageview", w.Add(time.Minute), "fe-2", 12)
	if err := pub.Close(context.Background()); err != nil {
		t.Fatalf("a new publisher beside old events (the registry must take the new schema): %v", err)
	}
	if got := row(t, reconcile(t, env.Broker.Addr, env.Registry, []time.Time{w}), "pageview", w, audit.TierProducer); got.Produced != 42 {
		t.Errorf("producer row %+v: want 42 events, 30 from the old event and 12 from the new", got)
	}
}

// oldMonitoringSchema is the monitoring schema without the fields added
// since: Count's distinct and the event's latency.
func oldMonitoringSchema(t *testing.T) string {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal([]byte(audit.MonitoringSchema), &s); err != nil {
		t.Fatal(err)
	}
	var fields []any
	for _, f := range s["fields"].([]any) {
		fm := f.(map[string]any)
		switch fm["name"] {
		case "latency":
			continue
		case "counts":
			count := fm["type"].(map[string]any)["items"].(map[string]any)
			var cf []any
			for _, x := range count["fields"].([]any) {
				if x.(map[string]any)["name"] != "distinct" {
					cf = append(cf, x)
				}
			}
			count["fields"] = cf
		}
		fields = append(fields, f)
	}
	s["fields"] = fields
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
