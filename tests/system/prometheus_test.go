package system_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// startPrometheus runs Debian's Prometheus server scraping targets every
// second and returns its address for PromQL queries.
func startPrometheus(t *testing.T, targets ...string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not found: run scripts/install-deps.sh (Debian package prometheus)")
	}
	dir := t.TempDir()
	var list string
	for _, tg := range targets {
		list += fmt.Sprintf("%q,", tg)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: tributary\n    static_configs:\n      - targets: [%s]\n", list)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeAddr(t)
	cmd := exec.Command(bin, "--config.file", filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", addr, "--log.level", "warn")
	out, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(out.Name())
			t.Logf("prometheus log:\n%s", log)
		}
	})
	return addr
}

// promQuery runs an instant PromQL query and returns the single value of
// its result, or ok false when the result is empty.
func promQuery(t *testing.T, addr, q string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" || len(r.Data.Result) != 1 {
		return 0, false
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// A real Prometheus scrapes a standalone process: after N records are
// produced, PromQL gives N for the topic's messages in, and a group's lag
// drops to 0 once it has consumed and committed everything.
func TestPrometheusScrapesStandalone(t *testing.T) {
	testenv.Needs(t, testenv.Tributary, testenv.Program("prometheus"))
	addr, mon := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", t.TempDir(), "--listen", addr,
		"--registry-listen", "", "--metrics-listen", mon, "--partitions", "3")
	testenv.WaitListening(t, p, mon, 60*time.Second)
	prom := startPrometheus(t, mon)

	const n = 1000
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testenv.ProduceRange(t, cl, "orders", 0, n)

	testenv.Eventually(t, 60*time.Second, "PromQL sees every record produced", func() bool {
		v, ok := promQuery(t, prom, `sum(tributary_broker_topic_messages_in_total{topic="orders"})`)
		return ok && v == n
	})

	// A group reads everything and commits: its lag series appear at 0.
	group, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
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
	testenv.Eventually(t, 60*time.Second, "PromQL shows the group's lag at 0 and its commits at N", func() bool {
		lag, ok1 := promQuery(t, prom, `sum(tributary_group_lag{group="billing",topic="orders"})`)
		committed, ok2 := promQuery(t, prom, `sum(tributary_group_committed_offset{group="billing",topic="orders"})`)
		return ok1 && ok2 && lag == 0 && committed == n
	})
	if v, ok := promQuery(t, prom, `sum(tributary_partition_high_watermark{topic="orders"})`); !ok || v != n {
		t.Errorf("high watermarks add up to %v (%v), want %d", v, ok, n)
	}
}

// A real Prometheus scrapes a mirror process and a standalone process with
// its registry: the mirror's copied count reaches what the source holds
// and its lag 0, and the registry reports itself ready with the schema
// registered through it.
func TestPrometheusScrapesMirrorAndRegistry(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary, testenv.Program("prometheus"))
	const n = 200
	connect, src := testenv.StartCluster(t, 1)
	addr, regAddr, mon := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	target := testenv.StartProcess(t, "standalone", "--data-dir", t.TempDir(), "--listen", addr,
		"--registry-listen", regAddr, "--metrics-listen", mon)
	testenv.WaitListening(t, target, regAddr, 60*time.Second)
	mirrorMon := testenv.FreeAddr(t)
	m := testenv.StartProcess(t, "mirror", "--source", "dc1="+connect, "--target", addr,
		"--topics", "^views$", "--metrics-listen", mirrorMon)
	testenv.WaitListening(t, m, mirrorMon, 60*time.Second)
	prom := startPrometheus(t, mon, mirrorMon)

	cl, err := kgo.NewClient(kgo.SeedBrokers(src[0].Addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testenv.ProduceRange(t, cl, "views", 0, n)
	testenv.Eventually(t, 60*time.Second, "the registry is ready (its /healthz answers 200)", func() bool {
		resp, err := http.Get("http://" + regAddr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	testenv.Run(t, "", 0, "schema", "register", "--registry=http://"+regAddr, "--subject", "views-value",
		"--file", filepath.Join("..", "..", "testdata", "schemas", "pageview.avsc"))

	testenv.Eventually(t, 90*time.Second, "PromQL sees every record copied by the mirror, no lag, and the target's messages in", func() bool {
		copied, ok1 := promQuery(t, prom, `sum(tributary_mirror_records_copied_total{topic="views"})`)
		lag, ok2 := promQuery(t, prom, `sum(tributary_mirror_lag{topic="views"})`)
		in, ok3 := promQuery(t, prom, `sum(tributary_broker_topic_messages_in_total{topic="views"})`)
		return ok1 && ok2 && ok3 && copied == n && lag == 0 && in == n
	})
	testenv.Eventually(t, 30*time.Second, "PromQL sees the registry ready with one schema", func() bool {
		ready, ok1 := promQuery(t, prom, `tributary_registry_ready`)
		schemas, ok2 := promQuery(t, prom, `tributary_registry_schemas`)
		return ok1 && ok2 && ready == 1 && schemas == 1
	})
}
