package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/tributary-io/tributary/audit"
)

//go:embed page.html
var pageText string

var pageTmpl = template.Must(template.New("page").Parse(pageText))

// page is what the template renders: the report arranged as a heat map
// and a chart, computed here so the template only lays it out.
type page struct {
	Title     string
	Subtitle  string
	Notice    string
	Generated string
	Refresh   int
	Threshold string
	Summary   summary
	Days      []span
	Columns   []column
	Topics    []heatTopic
	Chart     chart
	Problems  []problem
	More      int
	Lost      []string
	Notes     []string
}

type summary struct {
	Below, Lost, Open, Closed int
	Produced                  int64
}

type span struct {
	Label string
	Cols  int
}

type column struct{ Label, Full string }

type heatTopic struct {
	Topic string
	Rows  []heatRow
}

type heatRow struct {
	Tier  string
	Cells []heatCell
}

// heatCell is one (topic, tier, window). The numbers are on the element
// as data attributes and as text, so a person reads them and a test (or a
// script) checks them.
type heatCell struct {
	Has                                 bool
	Class, Text, Sub, Title, Window     string
	Completeness                        string
	Produced, Received, Missing, Excess int64
	Duplicates                          int64
	Status                              string
}

type problem struct {
	audit.Row
	Window, Completeness string
}

// maxProblems bounds the problem table; the heat map shows them all.
const maxProblems = 200

// HTML prints r as one self-contained page: inline CSS and SVG, no script
// and nothing fetched, so it can be mailed, archived or opened offline.
func HTML(w io.Writer, r *audit.Report, o Options) error {
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	p := page{
		Title:     o.Title,
		Notice:    o.Notice,
		Subtitle:  fmt.Sprintf("%s UTC · windows of %s · grace %s · threshold %s%%", rangeTitle(r), dur(r.Window), dur(r.Grace), pct(o.Threshold)),
		Generated: r.GeneratedAt.UTC().Format(time.RFC3339),
		Refresh:   int(o.Refresh.Seconds()),
		Threshold: pct(o.Threshold),
		Chart:     newChart(r),
	}
	if p.Title == "" {
		p.Title = "Tributary audit: " + rangeTitle(r)
	}
	p.Summary = summarize(r, o.Threshold)
	p.Days, p.Columns = columns(r.Windows)
	p.Topics = heat(r, o.Threshold)
	for _, row := range r.Rows {
		if row.Tier == r.Baseline || row.Status == audit.StatusOK || row.Status == audit.StatusOpen {
			continue
		}
		if len(p.Problems) == maxProblems {
			p.More++
			continue
		}
		p.Problems = append(p.Problems, problem{Row: row, Window: stamp(row.WindowStart), Completeness: pct(row.Completeness)})
	}
	for _, l := range r.Lost {
		p.Lost = append(p.Lost, lostLine(l))
	}
	p.Notes = r.Notes
	return pageTmpl.Execute(w, p)
}

func summarize(r *audit.Report, threshold float64) summary {
	s := summary{Below: len(r.Below(threshold)), Lost: len(r.Lost)}
	for _, row := range r.Rows {
		if row.Tier == r.Baseline {
			s.Produced += row.Produced
			continue
		}
		if row.Status == audit.StatusOpen {
			s.Open++
		} else if row.Closed() {
			s.Closed++
		}
	}
	return s
}

// columns labels the windows, grouping them by day.
func columns(ws []time.Time) ([]span, []column) {
	var days []span
	var cols []column
	for _, w := range ws {
		w = w.UTC()
		d := w.Format("Mon 2006-01-02")
		if len(days) == 0 || days[len(days)-1].Label != d {
			days = append(days, span{Label: d})
		}
		days[len(days)-1].Cols++
		cols = append(cols, column{Label: w.Format("15:04"), Full: stamp(w)})
	}
	return days, cols
}

// heat arranges the rows as topics × windows, one line per tier other than
// the baseline (the baseline's own line when it is the only tier).
func heat(r *audit.Report, threshold float64) []heatTopic {
	type key struct {
		topic, tier string
		w           time.Time
	}
	rows := make(map[key]audit.Row, len(r.Rows))
	for _, row := range r.Rows {
		rows[key{row.Topic, row.Tier, row.WindowStart}] = row
	}
	tiers := make([]string, 0, len(r.Tiers))
	for _, t := range r.Tiers {
		if t != r.Baseline {
			tiers = append(tiers, t)
		}
	}
	if len(tiers) == 0 {
		tiers = []string{r.Baseline}
	}
	var out []heatTopic
	for _, topic := range r.Topics {
		ht := heatTopic{Topic: topic}
		for _, tier := range tiers {
			hr := heatRow{Tier: tier}
			for _, w := range r.Windows {
				row, ok := rows[key{topic, tier, w}]
				hr.Cells = append(hr.Cells, cellFor(row, ok, w, threshold))
			}
			ht.Rows = append(ht.Rows, hr)
		}
		out = append(out, ht)
	}
	return out
}

func cellFor(row audit.Row, ok bool, w time.Time, threshold float64) heatCell {
	c := heatCell{Window: stamp(w)}
	if !ok {
		c.Class, c.Title = "none", stamp(w)+": nothing counted"
		return c
	}
	c.Has = true
	c.Completeness = pct(row.Completeness)
	c.Produced, c.Received, c.Missing, c.Excess, c.Status = row.Produced, row.Received, row.Missing, row.Excess, row.Status
	c.Duplicates = row.Duplicates
	c.Text = shortPct(row.Completeness)
	switch {
	case row.Status == audit.StatusMonitoringLost:
		// The numbers are known to be wrong; the attributes keep them.
		c.Text, c.Sub = "?", "lost event"
	case row.Status == audit.StatusProducerIncomplete:
		c.Text, c.Sub = "?", "producer counts short"
	case row.Missing > 0 && row.Excess > 0:
		c.Sub = fmt.Sprintf("−%d +%d", row.Missing, row.Excess)
	case row.Missing > 0:
		c.Sub = fmt.Sprintf("−%d", row.Missing)
	case row.Excess > 0:
		c.Sub = fmt.Sprintf("+%d", row.Excess)
	case row.Duplicates > 0:
		c.Sub = fmt.Sprintf("×%d", row.Duplicates)
	}
	c.Class = colour(row, threshold)
	c.Title = fmt.Sprintf("%s %s, tier %s: produced %d, received %d, missing %d, excess %d, duplicates %d, %s%% complete (%s)",
		row.Topic, stamp(w), row.Tier, row.Produced, row.Received, row.Missing, row.Excess, row.Duplicates, c.Completeness, row.Status)
	if row.LatencyP99 > 0 {
		c.Title += fmt.Sprintf("; latency p50 %s, p99 %s", latency(row.LatencyP50), latency(row.LatencyP99))
	}
	if row.Note != "" {
		c.Title += ". " + row.Note
	}
	return c
}

// colour picks a cell's class: by completeness for judged windows, apart
// for open windows and windows whose monitoring was lost.
func colour(row audit.Row, threshold float64) string {
	switch {
	case row.Status == audit.StatusMonitoringLost, row.Status == audit.StatusProducerIncomplete:
		return "lost"
	case row.Status == audit.StatusOpen:
		return "open"
	case row.Completeness >= 100 && (row.Excess > 0 || row.Duplicates > 0):
		return "dup"
	case row.Completeness >= 100:
		return "full"
	case row.Completeness >= threshold:
		return "ok"
	case row.Completeness >= 99:
		return "warn"
	case row.Completeness >= 90:
		return "bad"
	}
	return "fail"
}
