package audit_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/warehouse"
	"github.com/tributary-io/tributary/mirror"
	"github.com/tributary-io/tributary/schema"
)

// headerShape is one way users' event schemas carry the header, a topic
// of its own, and an event of it with every header field set.
type headerShape struct {
	topic, schema string
	event         func(t time.Time, server string) map[string]any
}

var guid16 = []byte("0123456789abcdef")

func headerShapes(t *testing.T) []headerShape {
	read := func(name string) string {
		b, err := os.ReadFile("../testdata/schemas/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return []headerShape{
		{"std", read("pageview.avsc"), func(at time.Time, server string) map[string]any {
			return map[string]any{"header": map[string]any{"time": at, "server": server, "service": "web", "guid": guid16},
				"memberId": int64(1), "pageKey": "home"}
		}},
		{"custom", read("custom-header.avsc"), func(at time.Time, server string) map[string]any {
			return map[string]any{"header": map[string]any{"time": at, "server": server, "service": "web", "guid": guid16}}
		}},
		{"plain", read("plain-long-header.avsc"), func(at time.Time, server string) map[string]any {
			return map[string]any{"header": map[string]any{"time": at.UnixMilli(), "server": server, "service": "web", "guid": guid16}}
		}},
	}
}

// The same events under three header shapes (our tributary.events.Header;
// another namespace and record name, after other fields; time as a plain
// long, last in its header) go through every tier: the counting producer,
// the live cluster, the mirror, the analysis cluster, the loader's
// warehouse tier and a count of the warehouse. Every tier reconciles at
// 100 % in every window, and the events whose header time is 0 are
// no_time in every tier alike, in the window of their record timestamp.
func TestHeaderShapesReconcileAtEveryTier(t *testing.T) {
	audittest.NeedServices(t)
	ctx := t.Context()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	connect, live := testenv.StartCluster(t, 1)
	liveURL, liveReg := audittest.StartRegistry(t, live[0].Addr)
	an := testenv.StartBroker(t)
	anURL, anReg := audittest.StartRegistry(t, an.Addr)
	shapes := headerShapes(t)
	for _, addr := range []string{live[0].Addr, an.Addr} {
		for _, s := range shapes {
			createTopic(t, addr, s.topic, 2)
		}
	}
	// Windows at the start of an hour three hours ago: the warehouse
	// count files an event without time in the window its hour begins
	// with (the files keep no record timestamp), so those events are
	// stamped in that window.
	base := time.Now().Add(-4 * time.Hour).Truncate(time.Hour)
	ws := []time.Time{base, base.Add(audit.DefaultWindow), base.Add(2 * audit.DefaultWindow)}
	const perWindow, noTime = 100, 7

	liveEnv := &audittest.Env{Broker: live[0], RegistryURL: liveURL, Registry: liveReg}
	for _, s := range shapes {
		sendShape(t, liveEnv, s, ws, perWindow, noTime)
	}

	mirrorPub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, an.Addr), Registry: anReg, Tier: audit.TierMirror, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	headers, err := audit.NewHeaderReader(anReg, audit.HeaderReaderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := mirror.New(mirror.Config{
		Sources: []mirror.Source{{Name: "dc1", ZooKeeper: connect, Registry: liveURL}},
		Target:  []string{an.Addr}, TargetRegistry: anURL, Topics: "^(std|custom|plain|_audit)$",
		Auditor: mirror.NewAuditTier(mirrorPub, headers, quiet), Logger: quiet, LogInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	waitCopied(t, m, live[0].Addr, 3*time.Minute, "std", "custom", "plain", audit.DefaultTopic)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("mirror: %v", err)
	}
	if err := mirrorPub.Close(ctx); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	sum, err := loader.Run(ctx, loader.Config{Brokers: []string{an.Addr}, Topics: []string{"std", "custom", "plain"},
		Warehouse: dir, Registry: anReg, Logger: quiet, Audit: &loader.AuditConfig{}})
	if err != nil || sum.AuditError != "" {
		t.Fatalf("load: %v %s", err, sum.AuditError)
	}

	from, to := ws[0], ws[len(ws)-1].Add(audit.DefaultWindow)
	publish := func(tier string, c *audit.Counts, topics []string) {
		cfg := audit.PublisherConfig{Client: audittest.Client(t, an.Addr), Registry: anReg, Tier: tier, Logger: quiet}
		if err := audit.PublishSnapshot(ctx, cfg, tier, c, topics, from, to); err != nil {
			t.Fatal(err)
		}
	}
	for tier, cl := range map[string]struct {
		addr string
		reg  *sr.Client
	}{audit.TierLive: {live[0].Addr, liveReg}, audit.TierAnalysis: {an.Addr, anReg}} {
		c, topics, err := audit.Scan(ctx, audit.ScanConfig{Brokers: []string{cl.addr}, Registry: cl.reg, Topics: []string{"std", "custom", "plain"}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		publish(tier, c, topics)
	}
	fsys, err := warehouse.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	c, topics, err := audit.ScanWarehouse(ctx, audit.WarehouseScanConfig{FS: fsys, From: from, To: to, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	const warehouseCount = "warehouse-count" // the loader's own counts are TierWarehouse
	publish(warehouseCount, c, topics)

	st := audit.NewStore()
	if _, err := audit.Load(ctx, audit.Source{Brokers: []string{an.Addr}, Registry: anReg}, time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	r := st.Report(audit.Options{From: from, To: to})
	keepReport(t, r, "header-shapes-report.html")
	tiers := []string{audit.TierProducer, audit.TierLive, audit.TierMirror, audit.TierAnalysis, audit.TierWarehouse, warehouseCount}
	type cellKey struct{ tier, topic string }
	produced, noTimes := map[cellKey]int64{}, map[cellKey]int64{}
	for _, row := range r.Rows {
		k := cellKey{row.Tier, row.Topic}
		produced[k] += row.Received
		noTimes[k] += row.NoTime
		if row.Completeness != 100 || row.Status != audit.StatusOK || row.Excess != 0 {
			t.Errorf("%s %s tier %s: %+v, want complete", row.Topic, row.WindowStart.Format(time.TimeOnly), row.Tier, row)
		}
	}
	for _, s := range shapes {
		for _, tier := range tiers {
			k := cellKey{tier, s.topic}
			if produced[k] != perWindow*int64(len(ws)) || noTimes[k] != noTime {
				t.Errorf("%s tier %s: %d events in windows and %d no_time, want %d and %d",
					s.topic, tier, produced[k], noTimes[k], perWindow*len(ws), noTime)
			}
		}
	}
	if len(r.Lost) != 0 || len(r.Notes) != 0 {
		t.Errorf("lost %v notes %v, want none", r.Lost, r.Notes)
	}
}

// sendShape produces, through a counting producer, perWindow events of
// shape s in each window with their header left for the serializer to
// complete but the time, and noTime events whose header time is 0,
// stamped 30 s into the first window.
func sendShape(t *testing.T, env *audittest.Env, s headerShape, ws []time.Time, perWindow, noTime int) {
	t.Helper()
	ctx := t.Context()
	server := "fe-" + s.topic
	ser, err := schema.NewSerializer(env.Registry, schema.SerializerConfig{Schema: s.schema, Service: "web", Server: server})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, env.Broker.Addr), Registry: env.Registry, Host: server})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := audit.NewProducer(audittest.Client(t, env.Broker.Addr), ser, pub)
	if err != nil {
		t.Fatal(err)
	}
	check := func(_ *kgo.Record, err error) {
		if err != nil {
			t.Errorf("produce: %v", err)
		}
	}
	for _, w := range ws {
		for i := range perWindow {
			ev := s.event(w.Add(audit.DefaultWindow*time.Duration(i)/time.Duration(perWindow)), "")
			// Left for the serializer: server, service, guid.
			h := ev["header"].(map[string]any)
			delete(h, "server")
			delete(h, "service")
			delete(h, "guid")
			if err := prod.Produce(ctx, s.topic, ev, check); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The serializer would fill a zero time: encode these directly.
	codec, err := goavro.NewCodec(s.schema)
	if err != nil {
		t.Fatal(err)
	}
	id, err := ser.ID(ctx, schema.TopicNameStrategy(s.topic))
	if err != nil {
		t.Fatal(err)
	}
	for range noTime {
		v, err := codec.BinaryFromNative(schema.AppendEnvelope(nil, id), s.event(time.UnixMilli(0), server))
		if err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: s.topic, Value: v, Timestamp: ws[0].Add(30 * time.Second)}
		if err := prod.ProduceRecord(ctx, r, check); err != nil {
			t.Fatal(err)
		}
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", s.topic, err))
	}
}
