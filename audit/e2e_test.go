package audit_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/audit/report"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/warehouse"
	"github.com/tributary-io/tributary/mirror"
)

var e2eEvents = flag.Int("audit.events", 500_000, "events TestEndToEnd sends")

// The whole pipeline, counted at every tier: two front-end servers
// produce pageviews over six windows into the live cluster (its own
// registry), the mirror copies them and the producers' monitoring events
// into the analysis cluster (its own registry) while counting as tier
// mirror, the loader loads the analysis cluster into a warehouse, and the
// live cluster, the analysis cluster and the warehouse are counted as
// tiers. The report over the analysis cluster's _audit topic finds every
// tier 100 % complete in every window.
func TestEndToEnd(t *testing.T) {
	audittest.NeedServices(t)
	ctx := t.Context()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	connect, live := testenv.StartCluster(t, 1)
	liveURL, liveReg := audittest.StartRegistry(t, live[0].Addr)
	an := testenv.StartBroker(t)
	anURL, anReg := audittest.StartRegistry(t, an.Addr)
	for _, addr := range []string{live[0].Addr, an.Addr} {
		createTopic(t, addr, "pageview", 4)
	}
	ws := pastWindows(6)
	liveEnv := &audittest.Env{Broker: live[0], RegistryURL: liveURL, Registry: liveReg}

	start := time.Now()
	per := *e2eEvents / 2
	for _, name := range []string{"fe-1", "fe-2"} {
		s := newServer(t, liveEnv, name, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		s.sendOver(t, "pageview", ws[0], time.Duration(len(ws))*audit.DefaultWindow, per)
		if err := s.pub.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("produced %d events in %v", 2*per, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	mirrorPub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, an.Addr), Registry: anReg, Tier: audit.TierMirror, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	headers, err := audit.NewHeaderReader(anReg, audit.HeaderReaderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	counter := mirror.NewAuditTier(mirrorPub, headers, quiet)
	m, err := mirror.New(mirror.Config{
		Sources: []mirror.Source{{Name: "dc1", ZooKeeper: connect, Registry: liveURL}},
		Target:  []string{an.Addr}, TargetRegistry: anURL, Topics: "^(pageview|_audit)$",
		Auditor: counter, Logger: quiet, LogInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	waitCopied(t, m, live[0].Addr, 3*time.Minute, "pageview", audit.DefaultTopic)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("mirror: %v", err)
	}
	if err := mirrorPub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("mirrored in %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	dir := t.TempDir()
	sum, err := loader.Run(ctx, loader.Config{Brokers: []string{an.Addr}, Topics: []string{"pageview"}, Warehouse: dir, Registry: anReg, Logger: quiet})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Logf("loaded %d records in %v", sum.Records, time.Since(start).Round(time.Millisecond))

	start = time.Now()
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
		c, topics, err := audit.Scan(ctx, audit.ScanConfig{Brokers: []string{cl.addr}, Registry: cl.reg, Topics: []string{"pageview"}})
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
	c, topics, err := audit.ScanWarehouse(ctx, audit.WarehouseScanConfig{FS: fsys, From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	publish(audit.TierWarehouse, c, topics)
	t.Logf("counted three tiers in %v", time.Since(start).Round(time.Millisecond))

	st := audit.NewStore()
	if _, err := audit.Load(ctx, audit.Source{Brokers: []string{an.Addr}, Registry: anReg}, time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	r := st.Report(audit.Options{From: from, To: to})
	keepReport(t, r, "e2e-report.html")
	tiers := []string{audit.TierProducer, audit.TierLive, audit.TierMirror, audit.TierAnalysis, audit.TierWarehouse}
	if len(r.Rows) != len(ws)*len(tiers) {
		t.Errorf("%d rows, want %d windows × %d tiers", len(r.Rows), len(ws), len(tiers))
	}
	var produced int64
	for _, row := range r.Rows {
		if row.Tier == audit.TierProducer {
			produced += row.Produced
		}
		if row.Completeness != 100 || row.Status != audit.StatusOK || row.Excess != 0 {
			t.Errorf("%s %s tier %s: %+v, want complete", row.Topic, row.WindowStart.Format(time.TimeOnly), row.Tier, row)
		}
	}
	if produced != int64(2*per) {
		t.Errorf("producers counted %d events, sent %d", produced, 2*per)
	}
	if len(r.Lost) != 0 || len(r.Notes) != 0 {
		t.Errorf("lost %v notes %v, want none", r.Lost, r.Notes)
	}
}

// waitCopied waits until m has every record of topics that the source
// at addr holds now committed in the target. It watches the mirror's own
// progress, not the target's end offsets: the mirror copies in
// transactions, whose commit markers take offsets in the target, so the
// target reaches the source's end offsets while the last copies are still
// uncommitted (a test that stopped the mirror there lost them).
func waitCopied(t *testing.T, m *mirror.Mirror, addr string, within time.Duration, topics ...string) {
	t.Helper()
	for _, topic := range topics {
		want := endOffsets(t, addr, topic)
		testenv.Eventually(t, within, "the mirror to copy "+topic, func() bool {
			var copied int64 // below each partition's Safe, all is committed in the target
			for _, s := range m.Status().Sources {
				for _, p := range s.Partitions {
					if p.Topic == topic {
						copied += p.Safe
					}
				}
			}
			return copied >= want
		})
	}
}

// endOffsets adds up the high watermarks of a topic's partitions.
func endOffsets(t *testing.T, addr, topic string) int64 {
	t.Helper()
	// A client of its own, closed here: callers poll this every few
	// milliseconds, and a client per poll left open until the test ends
	// runs into the broker's per-address connection cap.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// keepReport writes the HTML report where CI keeps artifacts.
func keepReport(t *testing.T, r *audit.Report, name string) {
	t.Helper()
	dir := os.Getenv("ARTIFACTS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "artifacts")
	}
	dir = filepath.Join(dir, "audit")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := report.HTML(f, r, report.Options{}); err != nil {
		t.Fatal(err)
	}
}
