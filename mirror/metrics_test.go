package mirror_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/metrics"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// TestMirrorMetrics copies a topic between real clusters and scrapes the
// mirror's metrics over HTTP: the copied counts add up to what was produced
// and the lag drops to 0.
func TestMirrorMetrics(t *testing.T) {
	const topic, partitions, perPart = "clicks", 2, 50
	src := startDC(t, "dc1", 1)
	target := testenv.StartBroker(t)
	createTopic(t, src.addrs(), topic, partitions)
	produce(t, src.addrs(), "dc1", topic, partitions, 0, perPart)

	m, _ := runMirror(t, mirror.Config{Sources: []mirror.Source{src.source()}, Target: []string{target.Addr}, Exclude: "^_"})
	ms := metrics.New()
	ms.Registry().MustRegister(m.Metrics())
	if err := ms.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer ms.Close(context.Background())
	waitForCount(t, []string{target.Addr}, topic, partitions*perPart, time.Minute)

	scrape := func() map[string]float64 {
		resp, err := http.Get("http://" + ms.Addr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		parser := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("scrape does not parse: %v", err)
		}
		sums := map[string]float64{}
		for name, f := range fams {
			for _, mm := range f.GetMetric() {
				sums[name] += mm.GetCounter().GetValue() + mm.GetGauge().GetValue()
			}
		}
		return sums
	}
	testenv.Eventually(t, 30*time.Second, "mirror metrics show every record copied and no lag", func() bool {
		s := scrape()
		return s["tributary_mirror_records_copied_total"] == partitions*perPart &&
			s["tributary_mirror_lag"] == 0 && s["tributary_mirror_partitions"] == partitions &&
			s["tributary_mirror_bytes_copied_total"] > 0
	})
}

// Records the source's retention deletes while the mirror is stopped are
// counted as lost, by exactly how many there were.
func TestMirrorMetricsCountLostRecords(t *testing.T) {
	needServices(t)
	connect, bs := testenv.StartCluster(t, 1, testenv.WithConfig(func(c *broker.Config) {
		c.Log.RetentionCheckInterval = 20 * time.Millisecond
	}))
	src := &dc{name: "dc1", zk: connect, brokers: bs}
	target := testenv.StartBroker(t)
	ctx := context.Background()
	// Small segments and a small size bound: old records go quickly.
	seg, keep := "2048", "4096"
	resp, err := kadm.NewClient(newClient(t, src.addrs())).CreateTopic(ctx, 1, 1,
		map[string]*string{"segment.bytes": &seg, "retention.bytes": &keep}, "events")
	if err != nil || resp.Err != nil {
		t.Fatalf("creating the topic: %v %v", err, resp.Err)
	}
	produce(t, src.addrs(), "dc1", "events", 1, 0, 10)
	cfg := mirror.Config{Sources: []mirror.Source{src.source()}, Target: []string{target.Addr}, Exclude: "^_", CommitInterval: 10 * time.Millisecond}
	m, stop := runMirror(t, cfg)
	waitForCount(t, []string{target.Addr}, "events", 10, time.Minute)
	testenv.Eventually(t, 30*time.Second, "the mirror commits what it copied", func() bool {
		st := m.Status()
		return len(st.Sources) == 1 && len(st.Sources[0].Partitions) == 1 && st.Sources[0].Partitions[0].Safe == 10
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// While the mirror is down, 200 more records arrive and retention
	// deletes the oldest, including some the mirror never copied.
	for from := 10; from < 210; from += 10 { // one batch each: segments roll between them
		produce(t, src.addrs(), "dc1", "events", 1, from, from+10)
	}
	adm := kadm.NewClient(newClient(t, src.addrs()))
	var logStart int64
	testenv.Eventually(t, 30*time.Second, "retention deletes records the mirror has not copied", func() bool {
		starts, err := adm.ListStartOffsets(ctx, "events")
		if err != nil {
			return false
		}
		o, _ := starts.Lookup("events", 0)
		logStart = o.Offset
		return logStart > 10
	})

	// Retention may go on deleting while the mirror catches up: whatever
	// it copies and what it counts lost add up to the 200 new records.
	m, _ = runMirror(t, cfg)
	ms := metrics.New()
	ms.Registry().MustRegister(m.Metrics())
	var lost, copied float64
	testenv.Eventually(t, time.Minute, "copied and lost records add up to the 200 produced", func() bool {
		lost, copied = count(t, ms, "tributary_mirror_records_lost_total"), count(t, ms, "tributary_mirror_records_copied_total")
		return lost+copied == 200
	})
	if lost < float64(logStart-10) {
		t.Errorf("records lost: %v, want at least %d (log start %d, copied up to 10)", lost, logStart-10, logStart)
	}
}

func count(t *testing.T, ms *metrics.Server, name string) float64 {
	fams, err := ms.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range fams {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
