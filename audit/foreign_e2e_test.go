package audit_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/warehouse"
	"github.com/tributary-io/tributary/mirror"
)

// foreignScripts is the Python side of the Protobuf and JSON Schema
// end-to-end tests, which the loader's tests share (events.py says what
// they produce).
var foreignScripts = filepath.Join("..", "loader", "testdata", "foreign")

// The pipeline for a Protobuf topic and a JSON Schema topic, counted at
// every tier: values serialized by Confluent's Python ProtobufSerializer
// and JSONSerializer (two schema versions; the Protobuf one with a
// referenced header file) are produced into the live cluster by an
// audited producer; the mirror carries them to the analysis cluster with
// their schemas and references registered there and the ids rewritten,
// counting as tier mirror; Confluent's deserializers read every record on
// the target as produced; the loader loads them into an Iceberg table
// counting as tier warehouse; both clusters are scanned as tiers. The
// report finds every tier complete in every window, and audit count of
// the warehouse, loaded again into Parquet and into Avro files, counts
// what the producers counted.
func TestEndToEndProtobufAndJSON(t *testing.T) {
	audittest.NeedServices(t)
	testenv.Needs(t, testenv.Python)
	if exec.Command("python3", "-c", "import confluent_kafka.schema_registry.protobuf, jsonschema").Run() != nil {
		t.Fatal("Python's confluent-kafka with its Protobuf and JSON serializers is missing: run scripts/install-deps.sh (.ci/run does)")
	}
	ctx := t.Context()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	live := testenv.StartBroker(t)
	liveURL, liveReg := audittest.StartRegistry(t, live.Addr)
	an := testenv.StartBroker(t)
	anURL, anReg := audittest.StartRegistry(t, an.Addr)
	// The analysis registry's first ids are taken, so that every schema
	// gets another id there than in the live registry.
	for i := range 3 {
		if _, err := anReg.CreateSchema(ctx, fmt.Sprintf("other%d-value", i), sr.Schema{Schema: fmt.Sprintf(`{"type":"record","name":"O%d","fields":[]}`, i)}); err != nil {
			t.Fatal(err)
		}
	}
	topics := map[string]string{"orders-pb": "proto", "orders-js": "json"}
	for _, addr := range []string{live.Addr, an.Addr} {
		for topic := range topics {
			createTopic(t, addr, topic, 2)
		}
	}

	// Events 20 s apart from 10 minutes before a window's end: two
	// windows, 30 events each of version 1 then 10 of version 2.
	ws := pastWindows(2)
	base := ws[1].Add(-10 * time.Minute)
	dir := t.TempDir()
	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, live.Addr), Registry: liveReg, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := audit.NewEnvelopeProducer(audittest.Client(t, live.Addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner())), pub, "")
	if err != nil {
		t.Fatal(err)
	}
	expected := map[string]string{}
	for topic, format := range topics {
		expected[topic] = filepath.Join(dir, topic+".jsonl")
		for _, v := range []struct{ version, first, n int }{{1, 0, 30}, {2, 30, 10}} {
			cmd := exec.CommandContext(ctx, "python3", filepath.Join(foreignScripts, "produce.py"), liveURL, "-", topic, format,
				fmt.Sprint(v.version), fmt.Sprint(v.first), fmt.Sprint(v.n), fmt.Sprint(base.UnixMilli()), expected[topic], "20000")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("produce.py: %v\n%s", err, out)
			}
		}
		for _, v := range readValues(t, expected[topic]+".values") {
			if err := prod.ProduceRecord(ctx, &kgo.Record{Topic: topic, Value: v}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
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
		Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{live.Addr}, Registry: liveURL}},
		Target:  []string{an.Addr}, TargetRegistry: anURL, Topics: "^(orders-pb|orders-js|_audit)$",
		Auditor: mirror.NewAuditTier(mirrorPub, headers, quiet), Logger: quiet, LogInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	waitCopied(t, m, live.Addr, 2*time.Minute, "orders-pb", "orders-js", audit.DefaultTopic)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("mirror: %v", err)
	}
	if err := mirrorPub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for topic, format := range topics {
		out, err := exec.CommandContext(ctx, "python3", filepath.Join(foreignScripts, "consume.py"), anURL, an.Addr, topic, format, expected[topic]).CombinedOutput()
		if err != nil {
			t.Fatalf("consume.py on the target: %v\n%s", err, out)
		}
		t.Logf("%s", strings.TrimSpace(string(out)))
	}

	from, to := ws[0], ws[1].Add(audit.DefaultWindow)
	// The Iceberg load counts as tier warehouse; audit count scans the
	// Parquet and Avro warehouses below.
	warehouses := map[string]string{loader.FormatParquet: t.TempDir(), loader.FormatAvro: t.TempDir(), "iceberg": t.TempDir()}
	for format, wdir := range warehouses {
		cfg := loader.Config{Brokers: []string{an.Addr}, Topics: []string{"orders-pb", "orders-js"}, Warehouse: wdir, Registry: anReg,
			Format: format, Logger: quiet}
		if format == "iceberg" {
			cfg.Format, cfg.Table, cfg.Audit = "", "db", &loader.AuditConfig{}
		}
		sum, err := loader.Run(ctx, cfg)
		if err != nil || sum.Records != 80 || sum.Errors != 0 {
			t.Fatalf("load into %s: %v; %d records, %d errors, want 80 and none", format, err, sum.Records, sum.Errors)
		}
		if sum.AuditError != "" {
			t.Fatalf("load into %s: audit: %s", format, sum.AuditError)
		}
	}
	for tier, addr := range map[string]string{audit.TierLive: live.Addr, audit.TierAnalysis: an.Addr} {
		reg := liveReg
		if tier == audit.TierAnalysis {
			reg = anReg
		}
		c, scanned, err := audit.Scan(ctx, audit.ScanConfig{Brokers: []string{addr}, Registry: reg, Topics: []string{"orders-pb", "orders-js"}})
		if err != nil {
			t.Fatal(err)
		}
		cfg := audit.PublisherConfig{Client: audittest.Client(t, an.Addr), Registry: anReg, Tier: tier, Logger: quiet}
		if err := audit.PublishSnapshot(ctx, cfg, tier, c, scanned, from, to); err != nil {
			t.Fatal(err)
		}
	}

	st := audit.NewStore()
	if _, err := audit.Load(ctx, audit.Source{Brokers: []string{an.Addr}, Registry: anReg}, time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	r := st.Report(audit.Options{From: from, To: to})
	tiers := []string{audit.TierProducer, audit.TierLive, audit.TierMirror, audit.TierAnalysis, audit.TierWarehouse}
	if len(r.Rows) != 2*len(ws)*len(tiers) {
		t.Errorf("%d rows, want 2 topics × %d windows × %d tiers", len(r.Rows), len(ws), len(tiers))
	}
	produced := map[string]int64{}
	for _, row := range r.Rows {
		if row.Tier == audit.TierProducer {
			produced[row.Topic] += row.Produced
		}
		if row.Completeness != 100 || row.Status != audit.StatusOK || row.Excess != 0 || row.Malformed != 0 || row.NoTime != 0 {
			t.Errorf("%s %s tier %s: %+v, want complete", row.Topic, row.WindowStart.Format(time.TimeOnly), row.Tier, row)
		}
	}
	if produced["orders-pb"] != 40 || produced["orders-js"] != 40 {
		t.Errorf("producers counted %v, want 40 of each topic", produced)
	}
	if len(r.Lost) != 0 || len(r.Notes) != 0 {
		t.Errorf("lost %v notes %v, want none", r.Lost, r.Notes)
	}

	// audit count of the warehouse reads what the loader wrote of these
	// topics, Parquet and Avro alike.
	for _, format := range []string{loader.FormatParquet, loader.FormatAvro} {
		fsys, err := warehouse.Open(warehouses[format])
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := audit.ScanWarehouse(ctx, audit.WarehouseScanConfig{FS: fsys, From: from, To: to})
		fsys.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for k, n := range c.Events {
			got[k.Topic] += n
		}
		if got["orders-pb"] != 40 || got["orders-js"] != 40 {
			t.Errorf("audit count of the %s warehouse: %v, want 40 of each topic", format, got)
		}
	}
}

// readValues reads produce.py's hex values, one a line.
func readValues(t *testing.T, name string) [][]byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		b, err := hex.DecodeString(s.Text())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
