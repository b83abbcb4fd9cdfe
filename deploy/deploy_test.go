package deploy

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
)

func promtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: run scripts/install-deps.sh (Debian package prometheus)")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool %v: %v\n%s", args, err, out)
	}
}

// The alert rules are valid and fire as their unit tests expect.
func TestAlertRules(t *testing.T) {
	testenv.Needs(t, testenv.Program("promtool"))
	promtool(t, "prometheus", "check", "rules", "alerts.yml")
	promtool(t, "prometheus", "test", "rules", "alerts_test.yml")
	data, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	checkMetricsExist(t, "alerts.yml", string(data))
}

// dashboard is the part of Grafana's dashboard model this test checks.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// The dashboard loads as Grafana's model: identified, panels with unique
// ids inside the 24-column grid, and every query valid PromQL (checked by
// promtool as recording rules) over metrics Tributary exports.
func TestDashboard(t *testing.T) {
	testenv.Needs(t, testenv.Program("promtool"))
	data, err := os.ReadFile("grafana/tributary.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 30 || len(d.Panels) == 0 {
		t.Fatalf("dashboard lacks uid, title, a current schemaVersion or panels: %+v", d)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	ids := map[int]bool{}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
			t.Errorf("panel %q outside the grid: %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			for _, v := range regexp.MustCompile(`\$(\w+)`).FindAllStringSubmatch(q.Expr, -1) {
				if !vars[v[1]] && !strings.HasPrefix(v[1], "__") {
					t.Errorf("panel %q uses undefined variable $%s", p.Title, v[1])
				}
			}
			expr := strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*").Replace(q.Expr)
			fmt.Fprintf(&rules, "      - record: panel_%d_%s\n        expr: %q\n", p.ID, q.RefID, expr)
			checkMetricsExist(t, p.Title, q.Expr)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "queries.yml"), []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, dir, "check", "rules", "queries.yml")
}

var exported = map[string]bool{}

// checkMetricsExist fails for every tributary_ metric in text that no Go
// file of the repository defines, so a renamed metric cannot silently
// empty a panel or disarm an alert.
func checkMetricsExist(t *testing.T, where, text string) {
	t.Helper()
	if len(exported) == 0 {
		src := readSources(t)
		for _, m := range regexp.MustCompile(`"(tributary_)?([a-z_]+)"`).FindAllStringSubmatch(src, -1) {
			exported["tributary_"+m[2]] = true
		}
	}
	for _, name := range regexp.MustCompile(`tributary_[a-z_]+`).FindAllString(text, -1) {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if trimmed, ok := strings.CutSuffix(name, suffix); ok && exported[trimmed] {
				base = trimmed
			}
		}
		if !exported[base] {
			t.Errorf("%s: metric %s is not exported by any Tributary process", where, name)
		}
	}
}

// readSources returns the non-test Go sources of the repository.
func readSources(t *testing.T) string {
	var b strings.Builder
	err := filepath.WalkDir("..", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
