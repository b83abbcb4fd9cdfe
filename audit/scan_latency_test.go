package audit_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
)

// A scan of a topic stamped with LogAppendTime knows when each event
// arrived in the cluster: its tier's rows get a latency (here events
// whose header time is 100 s before they were sent: the 65-131 s
// bucket, reported as 131,072 ms). A CreateTime topic's scan has none (0),
// as before: its timestamps say when the producer sent, not arrival.
func TestScanOfLogAppendTimeTopicHasLatency(t *testing.T) {
	env := audittest.Start(t)
	adm := kadm.NewClient(audittest.Client(t, env.Broker.Addr))
	appendTime := "LogAppendTime"
	if _, err := adm.CreateTopic(t.Context(), 1, -1, map[string]*string{"message.timestamp.type": &appendTime}, "arrived"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, env.Broker.Addr, "sent", 1)
	s := newServer(t, env, "fe-1")
	start := time.Now().Add(-100 * time.Second)
	for _, topic := range []string{"arrived", "sent"} {
		s.sendOver(t, topic, start, time.Millisecond, 50)
	}
	c, topics, err := audit.Scan(t.Context(), audit.ScanConfig{Brokers: []string{env.Broker.Addr}, Registry: env.Registry, Topics: []string{"arrived", "sent"}, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	w := audit.WindowStart(start, audit.DefaultWindow)
	cfg := audit.PublisherConfig{Client: audittest.Client(t, env.Broker.Addr), Registry: env.Registry, Tier: audit.TierLive}
	if err := audit.PublishSnapshot(t.Context(), cfg, "live", c, topics, w, w.Add(audit.DefaultWindow)); err != nil {
		t.Fatal(err)
	}
	st := audit.NewStore()
	if _, err := audit.Load(t.Context(), audit.Source{Brokers: []string{env.Broker.Addr}, Registry: env.Registry}, time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	rep := st.Report(audit.Options{From: w, To: w.Add(audit.DefaultWindow), Now: w.Add(24 * time.Hour)})
	if r := row(t, rep, "arrived", w, audit.TierLive); r.Received != 50 || r.LatencyP50 != 131072 || r.LatencyP99 != 131072 {
		t.Errorf("LogAppendTime topic: %+v; want 50 events, p50 and p99 131,072 ms", r)
	}
	if r := row(t, rep, "sent", w, audit.TierLive); r.Received != 50 || r.LatencyP50 != 0 {
		t.Errorf("CreateTime topic: %+v; want 50 events and no latency", r)
	}
}
