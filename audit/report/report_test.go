package report_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/report"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var day = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

// sample is a report with one of everything: complete windows, a loss
// (pageview 00:10, warehouse, 7 missing), duplicates (clicks 00:20,
// warehouse, 3 extra), a lost monitoring event (00:20, mirror) and an
// open window (00:50, at 01:55 with an hour's grace).
func sample() *audit.Report {
	st := audit.NewStore()
	n := 0
	prev := map[string][]audit.Prior{}
	add := func(tier, pub string, seq int64, w time.Time, counts ...audit.Count) {
		n++
		e := &audit.Event{Tier: tier, Publisher: pub, Source: pub, Sequence: seq, Window: w, Size: 10 * time.Minute,
			Published: w.Add(11 * time.Minute), Counts: counts, Previous: prev[pub]}
		copy(e.ID[:], fmt.Sprint(n))
		prev[pub] = append([]audit.Prior{{Sequence: seq, Window: w, Topics: []string{"clicks", "pageview"}}}, prev[pub]...)
		if tier == "mirror" && w.Equal(day.Add(20*time.Minute)) {
			return // lost: numbered and listed by the next event, never delivered
		}
		st.Add(e)
	}
	seqs := map[string]int64{}
	for i := range 6 {
		w := day.Add(time.Duration(i) * 10 * time.Minute)
		pv := []audit.Count{{Topic: "pageview", Server: "fe-1", N: int64(1000 + 10*i)}, {Topic: "pageview", Server: "fe-2", N: 800}}
		ck := []audit.Count{{Topic: "clicks", Server: "fe-1", N: int64(300 + i)}}
		for _, tier := range []string{"producer", "mirror", "warehouse"} {
			seqs[tier]++
			got := append(append([]audit.Count{}, pv...), ck...)
			switch {
			case tier == "warehouse" && i == 1:
				got[1].N -= 7
			case tier == "warehouse" && i == 2:
				got[2].N += 3
			}
			add(tier, tier+"-1", seqs[tier], w, got...)
		}
	}
	return st.Report(audit.Options{Now: day.Add(115 * time.Minute)})
}

func TestFormats(t *testing.T) {
	r := sample()
	for _, format := range report.Formats {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := report.Write(&b, format, r, report.Options{}); err != nil {
				t.Fatal(err)
			}
			golden(t, "sample."+format, b.Bytes())
		})
	}
}

func TestUnknownFormat(t *testing.T) {
	err := report.Write(&bytes.Buffer{}, "xml", sample(), report.Options{})
	if err == nil {
		t.Fatal("format xml accepted")
	}
}

func TestEmptyReport(t *testing.T) {
	r := audit.NewStore().Report(audit.Options{Now: day})
	for _, format := range report.Formats {
		var b bytes.Buffer
		if err := report.Write(&b, format, r, report.Options{}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if format == "json" && b.String() != "[]\n" {
			t.Errorf("empty JSON report is %q, want []", b.String())
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "audit", "report", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./audit/report -update rewrites it):\n%s", name, got)
	}
}
