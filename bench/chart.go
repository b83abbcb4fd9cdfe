package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

var chartColors = map[string]string{
	"tributary":   "#1f77b4",
	"kafka":       "#ff7f0e",
	"kafka-flush": "#8c564b",
	"rabbitmq":    "#2ca02c",
	"activemq":    "#d62728",
	"nats":        "#9467bd",
	// the three-node systems: darker shades of their one-node colours
	"tributary-rf3":   "#0b3c61",
	"kafka-rf3":       "#a35200",
	"kafka-rf3-flush": "#4d2f29",
}

// WriteSVG draws the throughput rows (produce, consume, replicated) as grouped bars
// on a logarithmic msg/s axis, one colour per system. Written by hand: a
// chart this simple does not need a plotting dependency.
func (rep *Report) WriteSVG(w io.Writer) error {
	type group struct {
		label string
		match func(Row) bool
	}
	var groups []group
	for _, p := range producerRows {
		groups = append(groups, group{fmt.Sprintf("produce b%d acks=%d", p.batch, p.acks),
			func(r Row) bool { return r.Test == TestProduce && r.Batch == p.batch && r.Acks == p.acks }})
	}
	groups = append(groups, group{"consume", func(r Row) bool { return r.Test == TestConsume }})
	if slices.ContainsFunc(rep.Rows, func(r Row) bool { return r.Test == TestReplicated }) {
		for _, v := range replicatedRows {
			groups = append(groups, group{fmt.Sprintf("acks=all b%d RF%d", v.batch, v.replicas), func(r Row) bool {
				return r.Test == TestReplicated && r.Batch == v.batch && r.Replicas == v.replicas
			}})
		}
	}

	var systemsSeen []string
	status := map[string]string{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rep.Rows {
		if _, ok := status[r.System]; !ok {
			systemsSeen = append(systemsSeen, r.System)
			status[r.System] = ""
		}
		if status[r.System] == "" && strings.HasPrefix(r.Status, "not started") {
			status[r.System] = " (not started)"
		}
		if r.OK() && (r.Test == TestProduce || r.Test == TestConsume || r.Test == TestReplicated) && r.MsgsPerSec > 0 {
			lo, hi = math.Min(lo, r.MsgsPerSec), math.Max(hi, r.MsgsPerSec)
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 1, 10
	}
	yMin := math.Pow(10, math.Floor(math.Log10(lo)))
	yMax := math.Pow(10, math.Ceil(math.Log10(hi)))
	if yMax <= yMin {
		yMax = yMin * 10
	}

	const (
		width, height = 960, 480
		left, right   = 80, 180
		top, bottom   = 40, 60
	)
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	y := func(v float64) float64 {
		f := (math.Log10(v) - math.Log10(yMin)) / (math.Log10(yMax) - math.Log10(yMin))
		return float64(top) + plotH*(1-f)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15">Throughput, %d-byte messages (msg/s, log scale)</text>`+"\n", left, rep.MessageSize)
	for d := yMin; d <= yMax*1.0001; d *= 10 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, float64(left)+plotW, y(d), y(d))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(d)+4, humanCount(d))
	}
	groupW := plotW / float64(len(groups))
	barW := groupW * 0.8 / float64(max(1, len(systemsSeen)))
	for gi, g := range groups {
		x0 := float64(left) + groupW*float64(gi) + groupW*0.1
		for si, s := range systemsSeen {
			for _, r := range rep.Rows {
				if r.System != s || !g.match(r) || !r.OK() || r.MsgsPerSec <= 0 {
					continue
				}
				x := x0 + barW*float64(si)
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.0f msg/s</title></rect>`+"\n",
					x, y(r.MsgsPerSec), barW-1, y(yMin)-y(r.MsgsPerSec), chartColors[s], html.EscapeString(s), html.EscapeString(g.label), r.MsgsPerSec)
			}
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x0+groupW*0.4, height-bottom+18, html.EscapeString(g.label))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%.0f" stroke="black"/>`+"\n", left, left, top, float64(top)+plotH)
	fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.0f" y2="%.0f" stroke="black"/>`+"\n", left, float64(left)+plotW, float64(top)+plotH, float64(top)+plotH)
	for si, s := range systemsSeen {
		ly := top + 20*si
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", width-right+15, ly, chartColors[s])
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s%s</text>`+"\n", width-right+32, ly+11, html.EscapeString(s), status[s])
	}
	if c := rep.Ceiling; c != nil {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">machine: loopback %.0f MB/s, disk write %.0f MB/s</text>`+"\n",
			left, height-12, c.LoopbackMBPerSec, c.DiskMBPerSec)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func humanCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
