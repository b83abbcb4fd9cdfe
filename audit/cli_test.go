package audit_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// tributary runs the binary to completion and returns its stdout, stderr
// and exit status.
func tributary(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	}
	t.Fatalf("tributary %v: %v", args, err)
	return "", "", -1
}

// pageviewLines returns n pageviews as JSON lines with times spread over w;
// the header is partial (the producer fills server, service and guid) and
// the union field is written as a bare string.
func pageviewLines(w time.Time, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"header": {"time": %d}, "memberId": %d, "pageKey": "jobs", "referrer": "https://example.com/%d"}`+"\n",
			w.Add(time.Duration(i)*time.Second).UnixMilli(), i, i)
	}
	return b.String()
}

// The commands a person runs: two servers produce JSON events with
// `tributary produce --schema`, `audit count` counts the live and the
// analysis cluster, and `audit report` prints every format, exits 1 with
// --fail-below when the analysis cluster lost events and names them, and
// `audit serve` shows the same as a live page.
func TestCommands(t *testing.T) {
	env := audittest.Start(t)
	analysis := testenv.StartBroker(t)
	createTopic(t, env.Broker.Addr, "pageview", 1)
	createTopic(t, analysis.Addr, "pageview", 1)
	ws := pastWindows(3)
	from, to := ws[0].Format(time.RFC3339), ws[2].Add(audit.DefaultWindow).Format(time.RFC3339)
	common := []string{"--brokers", env.Broker.Addr, "--registry", env.RegistryURL}
	produced := map[time.Time]int{}
	for s, server := range []string{"fe-1", "fe-2"} {
		var in strings.Builder
		for i, w := range ws {
			n := 40 + 10*i + s
			in.WriteString(pageviewLines(w, n))
			produced[w] += n
		}
		_, stderr, code := tributary(t, in.String(), append([]string{"produce", "--topic", "pageview", "--schema", pageviewSchema, "--server", server}, common...)...)
		if code != 0 || !strings.Contains(stderr, "counts published to _audit") {
			t.Fatalf("produce as %s: exit %d\n%s", server, code, stderr)
		}
	}
	// A line that is not an event is skipped, counted, and fails the run.
	_, stderr, code := tributary(t, `{"memberId": "seven", "pageKey": "x"}`+"\n",
		append([]string{"produce", "--topic", "pageview", "--schema", pageviewSchema}, common...)...)
	if code != 1 || !strings.Contains(stderr, "memberId") || !strings.Contains(stderr, "1 lines were not valid events") {
		t.Errorf("produce of an invalid line: exit %d, want 1 naming the field\n%s", code, stderr)
	}

	// The analysis cluster misses five events of the second window.
	dropped := 0
	copyTopics(t, env.Broker.Addr, analysis.Addr, env.Registry, injection{drop: func(_ string, _ int32, w time.Time, _ string) bool {
		if w.Equal(ws[1]) && dropped < 5 {
			dropped++
			return true
		}
		return false
	}}, "pageview")
	for tier, brokers := range map[string]string{"live": env.Broker.Addr, "analysis": analysis.Addr} {
		out, stderr, code := tributary(t, "", "audit", "count", "--tier", tier, "--brokers", brokers, "--audit-brokers", env.Broker.Addr,
			"--registry", env.RegistryURL, "--topics", "pageview", "--from", from, "--to", to)
		if code != 0 || !strings.Contains(out, "pageview") {
			t.Fatalf("audit count --tier %s: exit %d\n%s%s", tier, code, out, stderr)
		}
	}

	report := append([]string{"audit", "report", "--from", from, "--to", to}, common...)
	out, stderr, code := tributary(t, "", append(report, "--format", "json")...)
	if code != 0 {
		t.Fatalf("audit report --format json: exit %d\n%s", code, stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out)
	}
	if len(rows) != 3*3 {
		t.Fatalf("JSON report has %d rows, want 9 (3 windows × producer, live, analysis)", len(rows))
	}
	for _, r := range rows {
		for _, k := range []string{"topic", "window_start", "tier", "produced", "received", "missing", "excess", "completeness"} {
			if _, ok := r[k]; !ok {
				t.Fatalf("JSON row without %q: %v", k, r)
			}
		}
		w, _ := time.Parse(time.RFC3339, r["window_start"].(string))
		wantMissing := 0.0
		if r["tier"] == "analysis" && w.Equal(ws[1]) {
			wantMissing = 5
		}
		if r["produced"] != float64(produced[w]) || r["missing"] != wantMissing || r["excess"] != 0.0 {
			t.Errorf("row %v: want produced %d, missing %v", r, produced[w], wantMissing)
		}
	}

	out, _, code = tributary(t, "", append(report, "--format", "csv")...)
	if recs, err := csv.NewReader(strings.NewReader(out)).ReadAll(); code != 0 || err != nil || len(recs) != 10 || recs[0][0] != "topic" {
		t.Errorf("CSV report: exit %d, %v, %d records\n%s", code, err, len(recs), out)
	}
	page := filepath.Join(t.TempDir(), "audit.html")
	if _, stderr, code := tributary(t, "", append(report, "--format", "html", "--output", page)...); code != 0 {
		t.Fatalf("audit report --format html: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(page); !bytes.Contains(b, []byte(`id="heatmap"`)) || !bytes.Contains(b, []byte(`data-missing="5"`)) {
		t.Errorf("HTML report lacks the heat map or the loss:\n%s", b)
	}

	out, stderr, code = tributary(t, "", append(report, "--fail-below", "99.9")...)
	wantLine := fmt.Sprintf("topic pageview, window %s, tier analysis: 5 of %d missing", ws[1].Format("2006-01-02 15:04"), produced[ws[1]])
	if code != 1 || !strings.Contains(stderr, wantLine) || !strings.Contains(out, "1 closed windows below 99.9%") {
		t.Errorf("audit report --fail-below 99.9: exit %d, want 1 and %q\nstdout:\n%s\nstderr:\n%s", code, wantLine, out, stderr)
	}
	if _, stderr, code := tributary(t, "", append(report, "--fail-below", "99.9", "--tiers", "live")...); code != 0 {
		t.Errorf("--fail-below on the complete live tier: exit %d\n%s", code, stderr)
	}

	// inspect shows what the analysis tier's snapshot stated: its
	// publisher and the counts of the window that lost five events.
	out, stderr, code = tributary(t, "", append([]string{"audit", "inspect", "--tier", "analysis", "--from", from, "--to", to}, common...)...)
	wantCount := fmt.Sprintf("pageview  %s", ws[1].Format("2006-01-02 15:04"))
	if code != 0 || !strings.Contains(out, "Tier analysis: 1 publishers") || !strings.Contains(out, wantCount) {
		t.Errorf("audit inspect --tier analysis: exit %d, want its publisher and %q\n%s%s", code, wantCount, out, stderr)
	}

	testServe(t, env, common, ws)
}

// testServe checks `audit serve`: the page reloads itself, shows the loss
// in its heat map, and picks up counts published after it started.
func testServe(t *testing.T, env *audittest.Env, common []string, ws []time.Time) {
	addr := testenv.FreeAddr(t)
	p := testenv.StartProcess(t, append([]string{"audit", "serve", "--listen", addr, "--last", "6h", "--refresh", "2s"}, common...)...)
	testenv.WaitListening(t, p, addr, 30*time.Second)
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
		}
		return string(b)
	}
	var html string
	testenv.Eventually(t, 10*time.Second, "the live page to catch up", func() bool {
		html = get("/")
		return !strings.Contains(html, "Catching up")
	})
	cell := fmt.Sprintf(`data-topic="pageview" data-tier="analysis" data-window="%s" data-completeness="`, ws[1].Format("2006-01-02 15:04"))
	if !strings.Contains(html, `<meta http-equiv="refresh" content="2">`) || !strings.Contains(html, cell) {
		t.Fatalf("live page lacks the refresh or the analysis cell of window 2:\n%s", html)
	}
	// Counts published while the page is up appear on the next load.
	if _, stderr, code := tributary(t, "", append([]string{"audit", "count", "--tier", "mirror", "--topics", "pageview"}, common...)...); code != 0 {
		t.Fatalf("audit count --tier mirror: exit %d\n%s", code, stderr)
	}
	testenv.Eventually(t, 10*time.Second, "the mirror tier on the live page", func() bool {
		return strings.Contains(get("/report.json"), `"tier": "mirror"`)
	})
}
