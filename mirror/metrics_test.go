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
