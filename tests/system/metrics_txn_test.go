package system_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// A broker's /metrics shows its transactions as they happen: while a
// transaction is open, one open transaction, the lag of the last stable
// offset behind the high watermark, and the coordinator's load (the 50
// __transaction_state partitions a standalone broker leads, the one
// transactional id, a state partition read); once it commits, no open
// transaction, no lag and a commit marker written.
func TestTransactionMetricsOnTheEndpoint(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	addr, reg, mon := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", t.TempDir(), "--listen", addr,
		"--registry-listen", reg, "--metrics-listen", mon)
	testenv.WaitListening(t, p, addr, 60*time.Second)
	testenv.WaitListening(t, p, mon, 60*time.Second)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("metered"),
		kgo.DefaultProduceTopic("metered-topic"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	open := scrapeTxn(t, mon)
	for name, want := range map[string]float64{
		"tributary_transactions_open":                                      1,
		`tributary_partition_lso_lag{partition="0",topic="metered-topic"}`: 3,
		"tributary_transaction_coordinator_partitions":                     50,
		"tributary_transactional_ids":                                      1,
		`tributary_transaction_markers_total{result="commit"}`:             0,
	} {
		if got, ok := open[name]; !ok || got != want {
			t.Errorf("with a transaction open: %s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if open["tributary_transaction_state_loads_total"] != 1 {
		t.Errorf("with a transaction open: %v state partition loads counted, want 1 (the id's, empty)", open["tributary_transaction_state_loads_total"])
	}
	for _, name := range []string{"tributary_transaction_state_load_seconds_total", "tributary_transaction_state_load_records_total"} {
		if _, ok := open[name]; !ok {
			t.Errorf("%s is missing", name)
		}
	}

	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	done := scrapeTxn(t, mon)
	if done["tributary_transactions_open"] != 0 || done[`tributary_transaction_markers_total{result="commit"}`] != 1 {
		t.Errorf("after the commit: %v open transactions (want 0), %v commit markers (want 1)",
			done["tributary_transactions_open"], done[`tributary_transaction_markers_total{result="commit"}`])
	}
	if lag, ok := done[`tributary_partition_lso_lag{partition="0",topic="metered-topic"}`]; ok {
		t.Errorf("after the commit the partition still reports a last stable offset lag of %v", lag)
	}
}

var txnMetricLine = regexp.MustCompile(`(?m)^(tributary_(?:transaction|partition_lso)[a-z_]*(?:\{[^}]*\})?) (\S+)$`)

// scrapeTxn reads the transaction metrics off the broker's /metrics.
func scrapeTxn(t *testing.T, mon string) map[string]float64 {
	t.Helper()
	code, text := httpGet(t, "http://"+mon+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, text)
	}
	out := map[string]float64{}
	for _, m := range txnMetricLine.FindAllStringSubmatch(text, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", m[0], err)
		}
		out[m[1]] = v
	}
	return out
}
