package audit_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/schema"
)

const pageviewSchema = "../testdata/schemas/pageview.avsc"

// pastWindows returns the start of n consecutive windows that closed long
// enough ago (three hours) to be past the default grace period.
func pastWindows(n int) []time.Time {
	base := audit.WindowStart(time.Now().Add(-3*time.Hour), audit.DefaultWindow)
	out := make([]time.Time, n)
	for i := range out {
		out[i] = base.Add(time.Duration(i) * audit.DefaultWindow)
	}
	return out
}

// server is one simulated front-end host: a producer client, a serializer
// filling header.server with its name, and its own publisher, as each
// host of a real service would have.
type server struct {
	name string
	pub  *audit.Publisher
	prod *audit.Producer
}

func newServer(t *testing.T, env *audittest.Env, name string, opts ...kgo.Opt) *server {
	t.Helper()
	text, err := os.ReadFile(pageviewSchema)
	if err != nil {
		t.Fatal(err)
	}
	ser, err := schema.NewSerializer(env.Registry, schema.SerializerConfig{Schema: string(text), Service: "web", Server: name})
	if err != nil {
		t.Fatal(err)
	}
	cl := audittest.Client(t, env.Broker.Addr, opts...)
	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, env.Broker.Addr), Registry: env.Registry, Host: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pub.Close(ctx)
	})
	prod, err := audit.NewProducer(cl, ser, pub)
	if err != nil {
		t.Fatal(err)
	}
	return &server{name: name, pub: pub, prod: prod}
}

// send produces n pageviews of topic with header times spread over window
// w, and waits for them to be acknowledged.
func (s *server) send(t *testing.T, topic string, w time.Time, n int) {
	t.Helper()
	s.sendOver(t, topic, w, audit.DefaultWindow, n)
}

// sendOver produces n pageviews of topic with header times spread evenly
// over [start, start+span), and waits for them to be acknowledged.
func (s *server) sendOver(t *testing.T, topic string, start time.Time, span time.Duration, n int) {
	t.Helper()
	ctx := t.Context()
	for i := range n {
		ev := map[string]any{
			"header":   map[string]any{"time": start.Add(span * time.Duration(i) / time.Duration(n))},
			"memberId": int64(i),
			"pageKey":  "home",
		}
		if err := s.prod.Produce(ctx, topic, ev, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// reconcile loads every monitoring event of the env's audit topic and
// reconciles them over windows.
func reconcile(t *testing.T, brokers string, reg *sr.Client, windows []time.Time) *audit.Report {
	t.Helper()
	st := audit.NewStore()
	if _, err := audit.Load(context.Background(), audit.Source{Brokers: []string{brokers}, Registry: reg}, time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	return st.Report(audit.Options{From: windows[0], To: windows[len(windows)-1].Add(audit.DefaultWindow)})
}

// snapshot counts what the broker at addr holds and publishes it as tier
// to the audit topic at auditAddr.
func snapshot(t *testing.T, addr, auditAddr string, reg *sr.Client, tier string, windows []time.Time, topics ...string) *audit.Counts {
	t.Helper()
	ctx := context.Background()
	c, scanned, err := audit.Scan(ctx, audit.ScanConfig{Brokers: []string{addr}, Registry: reg, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	cfg := audit.PublisherConfig{Client: audittest.Client(t, auditAddr), Registry: reg, Tier: tier}
	if err := audit.PublishSnapshot(ctx, cfg, tier+"@"+addr, c, scanned, windows[0], windows[len(windows)-1].Add(audit.DefaultWindow)); err != nil {
		t.Fatal(err)
	}
	return c
}

// row finds the row of (topic, window, tier).
func row(t *testing.T, r *audit.Report, topic string, w time.Time, tier string) audit.Row {
	t.Helper()
	for _, x := range r.Rows {
		if x.Topic == topic && x.WindowStart.Equal(w) && x.Tier == tier {
			return x
		}
	}
	t.Fatalf("no row for %s %s %s", topic, w.Format(time.RFC3339), tier)
	return audit.Row{}
}
