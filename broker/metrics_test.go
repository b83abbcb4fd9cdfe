package broker_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/metrics"
	"github.com/tributary-io/tributary/internal/testenv"
)

// scrape fetches /metrics over HTTP and returns the raw text and its parsed
// families.
func scrape(t *testing.T, addr string) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scraping: %d %v", resp.StatusCode, err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("scraped text does not parse: %v", err)
	}
	return string(body), fams
}

// sum adds the values of a family's series whose labels include want.
func sum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var total float64
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

// TestBrokerMetricsMove produces and consumes with kgo against a real broker
// and reads its metrics over HTTP, as Prometheus would: the numbers of the
// topic and the group moved by exactly what the clients did, every family
// has a HELP line, and promtool accepts the exposition.
func TestBrokerMetricsMove(t *testing.T) {
	testenv.Needs(t, testenv.Program("promtool"))
	b := testenv.StartBroker(t)
	srv := metrics.New()
	srv.Registry().MustRegister(b.Metrics())
	srv.AddReadyCheck("broker", b.Ready)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	pedantic := prometheus.NewPedanticRegistry()
	pedantic.MustRegister(b.Metrics())

	const n = 500
	cl := newClient(t, b.Addr)
	testenv.CreateTopic(t, cl, "metered", 2)
	testenv.ProduceRange(t, cl, "metered", 0, n)

	group := newClient(t, b.Addr, kgo.ConsumerGroup("watchers"), kgo.ConsumeTopics("metered"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for seen := 0; seen < n; {
		fs := group.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", seen, n)
		}
		seen += fs.NumRecords()
	}

	// Before the commit the group is n behind; after it, caught up.
	_, fams := scrape(t, srv.Addr())
	topic := map[string]string{"topic": "metered"}
	if got := sum(fams, "tributary_broker_topic_messages_in_total", topic); got != n {
		t.Errorf("messages in: %v, want %d", got, n)
	}
	if got := sum(fams, "tributary_partition_high_watermark", topic); got != n {
		t.Errorf("high watermarks add up to %v, want %d", got, n)
	}
	if got := sum(fams, "tributary_partition_log_end_offset", topic); got != n {
		t.Errorf("log end offsets add up to %v, want %d", got, n)
	}
	if got := sum(fams, "tributary_partition_unflushed_bytes", topic); got != 0 {
		t.Errorf("unflushed bytes after acks=all: %v", got)
	}
	if sum(fams, "tributary_broker_topic_bytes_in_total", topic) <= 0 || sum(fams, "tributary_broker_topic_bytes_out_total", topic) <= 0 {
		t.Error("bytes in or out did not move")
	}
	for _, api := range []string{"Produce", "Fetch", "Metadata", "JoinGroup"} {
		if sum(fams, "tributary_broker_requests_total", map[string]string{"api": api}) == 0 ||
			sum(fams, "tributary_broker_request_duration_seconds", map[string]string{"api": api}) == 0 {
			t.Errorf("no %s request counted", api)
		}
	}
	if sum(fams, "tributary_broker_connections_accepted_total", nil) == 0 || sum(fams, "tributary_broker_connections_open", nil) == 0 {
		t.Error("connections not counted")
	}
	if sum(fams, "tributary_log_flush_duration_seconds", nil) == 0 {
		t.Error("no fsync observed")
	}
	if sum(fams, "tributary_broker_data_dir_free_bytes", nil) <= 0 || sum(fams, "tributary_broker_data_dir_capacity_bytes", nil) <= 0 {
		t.Error("data directory's free space not reported")
	}
	if sum(fams, "tributary_partition_producer_ids", topic) == 0 {
		t.Error("kgo's idempotent producer id is not tracked")
	}

	if got := sum(fams, "tributary_group_members", map[string]string{"group": "watchers", "state": "Stable"}); got != 1 {
		t.Errorf("members of the stable group: %v, want 1", got)
	}
	if got := sum(fams, "tributary_group_generation", map[string]string{"group": "watchers"}); got < 1 {
		t.Errorf("generation of the stable group: %v, want at least one rebalance", got)
	}
	if err := group.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	text, fams := scrape(t, srv.Addr())
	g := map[string]string{"group": "watchers", "topic": "metered"}
	if got := sum(fams, "tributary_group_committed_offset", g); got != n {
		t.Errorf("committed offsets add up to %v, want %d", got, n)
	}
	if fams["tributary_group_lag"] == nil || sum(fams, "tributary_group_lag", g) != 0 {
		t.Errorf("group lag after committing everything: %v (family present: %v)", sum(fams, "tributary_group_lag", g), fams["tributary_group_lag"] != nil)
	}
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "client_id" {
					t.Errorf("%s has a client_id label: unbounded", name)
				}
			}
		}
	}
	promtoolCheck(t, text)

	// Every series collected belongs to a family the collector described
	// when it was registered on an idle broker, so the registry can refuse
	// a second family of the same name.
	if _, err := pedantic.Gather(); err != nil {
		t.Errorf("pedantic gather: %v", err)
	}
}

// promtoolCheck runs Prometheus's own linter on an exposition.
func promtoolCheck(t *testing.T, text string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: run scripts/install-deps.sh (Debian package prometheus)")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// /readyz follows the broker: ready while it serves, not once it is shut
// down; /healthz stays up as long as the process does.
func TestBrokerReadiness(t *testing.T) {
	b := testenv.StartBroker(t)
	srv := metrics.New()
	srv.AddReadyCheck("broker", b.Ready)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	status := func(path string) int {
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("/readyz"); got != 200 {
		t.Fatalf("/readyz of a serving broker: %d", got)
	}
	b.Stop()
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Fatalf("/readyz of a stopped broker: %d", got)
	}
	if got := status("/healthz"); got != 200 {
		t.Fatalf("/healthz: %d", got)
	}
}

// In a cluster each broker reports the lag of every group on the
// partitions it stores, whichever broker coordinates the group: summed
// over the brokers, the committed offsets cover every partition once.
func TestClusterGroupLagOnEveryBroker(t *testing.T) {
	_, brokers := testenv.StartCluster(t, 2)
	const n = 400
	cl := newClient(t, brokers[0].Addr)
	testenv.CreateTopic(t, cl, "spread", 4)
	testenv.ProduceRange(t, cl, "spread", 0, n)

	group := newClient(t, brokers[0].Addr, kgo.ConsumerGroup("spreaders"), kgo.ConsumeTopics("spread"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for seen := 0; seen < n; {
		fs := group.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", seen, n)
		}
		seen += fs.NumRecords()
	}
	if err := group.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	var committed, series float64
	for _, b := range brokers {
		reg := prometheus.NewRegistry()
		reg.MustRegister(b.Metrics())
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*dto.MetricFamily{}
		for _, f := range fams {
			byName[f.GetName()] = f
		}
		g := map[string]string{"group": "spreaders", "topic": "spread"}
		committed += sum(byName, "tributary_group_committed_offset", g)
		if f := byName["tributary_group_lag"]; f != nil {
			series += float64(len(f.GetMetric()))
		}
		if lag := sum(byName, "tributary_group_lag", g); lag != 0 {
			t.Errorf("broker %s reports lag %v after everything was committed", b.Addr, lag)
		}
	}
	if committed != n || series != 4 {
		t.Errorf("brokers report committed offsets adding up to %v over %v partitions, want %d over 4", committed, series, n)
	}
}
