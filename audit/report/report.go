// Package report prints an audit.Report for people and programs: a text
// table, JSON (an array of rows), CSV, or one self-contained HTML page
// with a completeness heat map (topics × windows) and a line chart of
// counts per tier; Live serves that page from a Store that keeps filling.
//
// Every format carries the same rows; only the HTML page and the table add
// the lost monitoring events and notes, which JSON and CSV readers find in
// each row's status and note.
package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/audit"
)

// Formats lists the formats Write knows.
var Formats = []string{"table", "json", "csv", "html"}

// Options changes how a report is printed.
type Options struct {
	// Threshold is the completeness (percent) under which a closed window
	// is a failure; the table lists those, the page colours by it.
	// Default: DefaultThreshold.
	Threshold float64
	// Refresh makes the HTML page reload itself this often (live pages).
	Refresh time.Duration
	// Title of the HTML page. Default: derived from the report's range.
	Title string
	// Notice is shown at the top of the HTML page (a live page catching
	// up, say).
	Notice string
}

// DefaultThreshold is the completeness a window is expected to reach.
const DefaultThreshold = 99.9

// Write prints r to w in format (table, json, csv or html).
func Write(w io.Writer, format string, r *audit.Report, o Options) error {
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	switch format {
	case "table", "":
		return Table(w, r, o)
	case "json":
		return JSON(w, r)
	case "csv":
		return CSV(w, r)
	case "html":
		return HTML(w, r, o)
	}
	return fmt.Errorf("unknown report format %q: use table, json, csv or html", format)
}

// pct prints a completeness without trailing zeros ("100", "99.95").
func pct(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// shortPct prints a completeness for a heat map cell: at most two
// decimals, rounded down so that a loss never shows as 100.
func shortPct(x float64) string { return strconv.FormatFloat(math.Floor(x*100)/100, 'f', -1, 64) }

// dur prints a duration the way people write it: "10m", "1h", "1h30m".
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// stamp prints a window start.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") }

func rangeTitle(r *audit.Report) string {
	switch {
	case !r.From.IsZero() && !r.To.IsZero():
		return fmt.Sprintf("%s to %s", stamp(r.From), stamp(r.To))
	case !r.From.IsZero():
		return "from " + stamp(r.From)
	case !r.To.IsZero():
		return "until " + stamp(r.To)
	case len(r.Windows) > 0:
		return fmt.Sprintf("%s to %s", stamp(r.Windows[0]), stamp(r.Windows[len(r.Windows)-1].Add(r.Window)))
	}
	return "all windows"
}
