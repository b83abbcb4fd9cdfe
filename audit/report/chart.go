package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/tributary-io/tributary/audit"
)

// chart is an SVG line chart of events per window, one line per tier
// (produced for the baseline, received for the others), all topics added.
type chart struct {
	Width, Height int
	Left, Right   int
	Top, Bottom   int
	Series        []series
	YTicks        []tick
	XTicks        []tick
	Empty         bool
}

type series struct {
	Tier, Colour, Points, Dash string
	Total                      int64
}

type tick struct {
	Pos   float64
	Label string
}

// tierColours are told apart by most colour-blind readers.
var tierColours = []string{"#37474f", "#1e88e5", "#d81b60", "#ffc107", "#004d40", "#8e24aa", "#f4511e"}

func newChart(r *audit.Report) chart {
	c := chart{Width: 960, Height: 260, Left: 72, Right: 900, Top: 16, Bottom: 220}
	n := len(r.Windows)
	if n == 0 || len(r.Rows) == 0 {
		c.Empty = true
		return c
	}
	index := make(map[int64]int, n)
	for i, w := range r.Windows {
		index[w.UnixMilli()] = i
	}
	values := map[string][]int64{}
	var top int64
	for _, t := range r.Tiers {
		values[t] = make([]int64, n)
	}
	for _, row := range r.Rows {
		i, ok := index[row.WindowStart.UnixMilli()]
		if !ok {
			continue
		}
		v := row.Received
		if row.Tier == r.Baseline {
			v = row.Produced
		}
		values[row.Tier][i] += v
		top = max(top, values[row.Tier][i])
	}
	yMax := niceCeil(top)
	x := func(i int) float64 {
		if n == 1 {
			return float64(c.Left+c.Right) / 2
		}
		return float64(c.Left) + float64(i)*float64(c.Right-c.Left)/float64(n-1)
	}
	y := func(v int64) float64 {
		return float64(c.Bottom) - float64(v)/float64(yMax)*float64(c.Bottom-c.Top)
	}
	for k, t := range r.Tiers {
		var pts strings.Builder
		var total int64
		for i, v := range values[t] {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(i), y(v))
			total += v
		}
		s := series{Tier: t, Colour: tierColours[k%len(tierColours)], Points: strings.TrimSpace(pts.String()), Total: total}
		if t == r.Baseline {
			s.Dash = "6 4" // drawn dashed so the tiers on top of it stay visible
		}
		c.Series = append(c.Series, s)
	}
	for _, v := range []int64{0, yMax / 2, yMax} {
		c.YTicks = append(c.YTicks, tick{Pos: y(v), Label: fmt.Sprint(v)})
	}
	step := max(1, int(math.Ceil(float64(n)/8)))
	for i := 0; i < n; i += step {
		c.XTicks = append(c.XTicks, tick{Pos: x(i), Label: r.Windows[i].UTC().Format("01-02 15:04")})
	}
	return c
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so axis labels
// are round numbers.
func niceCeil(v int64) int64 {
	if v <= 0 {
		return 1
	}
	p := int64(1)
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []int64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
