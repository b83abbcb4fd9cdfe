package report

import (
	"bytes"
	"log/slog"
	"net/http"
	"time"

	"github.com/tributary-io/tributary/audit"
)

// Live serves the report of a Store that keeps filling (`tributary audit
// serve`): the HTML page at /, reloading itself every Page.Refresh, and
// the same rows at /report.json and /report.csv. Every request reconciles
// the store afresh, so a page is never older than its last reload.
type Live struct {
	Store *audit.Store
	// Options returns what a request at now reports, e.g. the last day.
	Options func(now time.Time) audit.Options
	// Page sets the threshold and the reload interval.
	Page Options
	// Ready reports whether the store has read the audit topic up to
	// where it was at start; until then the page says it is catching up.
	// Nil: always ready.
	Ready func() bool
}

func (l *Live) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var format, ctype string
	switch r.URL.Path {
	case "/", "/index.html":
		format, ctype = "html", "text/html; charset=utf-8"
	case "/report.json":
		format, ctype = "json", "application/json"
	case "/report.csv":
		format, ctype = "csv", "text/csv; charset=utf-8"
	default:
		http.NotFound(w, r)
		return
	}
	rep := l.Store.Report(l.Options(time.Now()))
	o := l.Page
	if l.Ready != nil && !l.Ready() {
		o.Notice = "Catching up with the audit topic: counts are still being read."
	}
	var b bytes.Buffer
	if err := Write(&b, format, rep, o); err != nil {
		slog.Error("audit serve: rendering the report", "format", format, "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}
