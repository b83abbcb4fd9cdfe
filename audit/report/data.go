package report

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/tributary-io/tributary/audit"
)

// JSON prints the rows as a JSON array, one object per (topic, window,
// tier), times in RFC 3339 UTC.
func JSON(w io.Writer, r *audit.Report) error {
	rows := r.Rows
	if rows == nil {
		rows = []audit.Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// csvHeader names the CSV columns, the JSON fields in the same order.
var csvHeader = []string{"topic", "window_start", "window_end", "tier", "produced", "received", "missing", "excess", "duplicates", "completeness", "no_time", "malformed", "latency_p50_ms", "latency_p99_ms", "status", "note"}

// CSV prints the rows with a header line.
func CSV(w io.Writer, r *audit.Report) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, row := range r.Rows {
		cw.Write([]string{row.Topic, row.WindowStart.UTC().Format(time.RFC3339), row.WindowEnd.UTC().Format(time.RFC3339), row.Tier,
			n(row.Produced), n(row.Received), n(row.Missing), n(row.Excess), n(row.Duplicates), pct(row.Completeness), n(row.NoTime), n(row.Malformed), n(row.LatencyP50), n(row.LatencyP99), row.Status, row.Note})
	}
	cw.Flush()
	return cw.Error()
}
