package report_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/tributary-io/tributary/audit/report"
	"github.com/tributary-io/tributary/internal/testenv"
)

// chromiumFlags are the headless flags that work on a machine without a
// display, a sandbox or a network (see scripts/install-deps.sh).
var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"}

// TestHTMLInChromium opens the report page in a real browser (Debian's
// chromium): the DOM it builds carries every heat map cell with its
// numbers, and its screenshot shows the cells in their colours. The
// screenshot is kept in $ARTIFACTS_DIR/audit (default: artifacts/audit at
// the repository root) for CI to archive.
func TestHTMLInChromium(t *testing.T) {
	testenv.Needs(t, testenv.Program("chromium"))
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is missing: run scripts/install-deps.sh (.ci/run does)")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "audit.html")
	var b bytes.Buffer
	if err := report.HTML(&b, sample(), report.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	dom := runChromium(t, bin, dir, "--dump-dom", url)
	cells := heatCells(t, dom)
	if len(cells) != 2*2*6 {
		t.Fatalf("heat map has %d cells, want 24 (2 topics × 2 tiers × 6 windows)", len(cells))
	}
	for _, want := range []struct {
		key, class, text, completeness, missing, excess string
	}{
		{"pageview/warehouse/2024-05-01 00:10", "warn", "99.61−7", "99.6132", "7", "0"},
		{"clicks/warehouse/2024-05-01 00:20", "dup", "100+3", "100", "0", "3"},
		{"clicks/mirror/2024-05-01 00:20", "lost", "?lost event", "0", "302", "0"},
		{"pageview/mirror/2024-05-01 00:00", "full", "100", "100", "0", "0"},
		{"pageview/mirror/2024-05-01 00:50", "open", "100", "100", "0", "0"},
	} {
		c, ok := cells[want.key]
		if !ok {
			t.Errorf("no heat map cell %s", want.key)
			continue
		}
		if c.attr["class"] != "cell "+want.class {
			t.Errorf("cell %s has class %q, want cell %s", want.key, c.attr["class"], want.class)
		}
		if c.text != want.text || c.attr["data-completeness"] != want.completeness || c.attr["data-missing"] != want.missing || c.attr["data-excess"] != want.excess {
			t.Errorf("cell %s: text %q completeness %s missing %s excess %s; want %q %s %s %s", want.key,
				c.text, c.attr["data-completeness"], c.attr["data-missing"], c.attr["data-excess"],
				want.text, want.completeness, want.missing, want.excess)
		}
	}
	if n := strings.Count(dom, `<polyline class="series"`); n != 3 {
		t.Errorf("chart has %d lines, want 3 (producer, mirror, warehouse)", n)
	}

	shot := filepath.Join(artifacts(t), "audit-report.png")
	runChromium(t, bin, dir, "--window-size=1300,1100", "--screenshot="+shot, url)
	img := readPNG(t, shot)
	// Each colour must cover at least a cell's worth of pixels.
	for name, c := range map[string][3]uint8{
		"100% green": {0x2e, 0x7d, 0x32}, "≥99% yellow": {0xff, 0xf1, 0x76},
		"duplicates blue": {0x15, 0x65, 0xc0}, "lost purple": {0x6a, 0x1b, 0x9a},
	} {
		if n := countColour(img, c); n < 500 {
			t.Errorf("screenshot has %d pixels of the %s cells, want a rendered heat map (see %s)", n, name, shot)
		}
	}
	t.Logf("screenshot: %s", shot)
}

func runChromium(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// A fresh profile per run: a profile left by an earlier run may be
	// locked or hold state that changes the page.
	profile, err := os.MkdirTemp(dir, "profile")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, append(append(append([]string{}, chromiumFlags...), "--user-data-dir="+profile), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

type element struct {
	attr map[string]string
	text string
}

// heatCells returns the heat map's cells that hold counts, by
// topic/tier/window.
func heatCells(t *testing.T, dom string) map[string]element {
	t.Helper()
	root, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatalf("parse the DOM chromium dumped: %v", err)
	}
	cells := map[string]element{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "td" {
			e := element{attr: map[string]string{}}
			for _, a := range n.Attr {
				e.attr[a.Key] = a.Val
			}
			if e.attr["data-topic"] != "" {
				e.text = textOf(n)
				cells[e.attr["data-topic"]+"/"+e.attr["data-tier"]+"/"+e.attr["data-window"]] = e
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return cells
}

func textOf(n *html.Node) string {
	if n.Type == html.TextNode {
		return strings.TrimSpace(n.Data)
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(textOf(c))
	}
	return b.String()
}

// artifacts returns the directory CI keeps: $ARTIFACTS_DIR/audit, or
// artifacts/audit at the repository root.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ARTIFACTS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "artifacts")
	}
	dir, err := filepath.Abs(filepath.Join(dir, "audit"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	return img
}

func countColour(img image.Image, want [3]uint8) int {
	near := func(a uint32, b uint8) bool {
		d := int(a>>8) - int(b)
		return d >= -6 && d <= 6
	}
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(r, want[0]) && near(g, want[1]) && near(b, want[2]) {
				n++
			}
		}
	}
	return n
}
