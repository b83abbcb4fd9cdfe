package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tributary-io/tributary/audit"
)

// Table prints r as aligned text: the rows, then what a person must know
// to read them (lost monitoring events, notes) and the closed windows
// below the threshold.
func Table(w io.Writer, r *audit.Report, o Options) error {
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	fmt.Fprintf(w, "Tributary audit, %s UTC: windows of %s, grace %s, threshold %s%%\n\n", rangeTitle(r), dur(r.Window), dur(r.Grace), pct(o.Threshold))
	if len(r.Rows) == 0 {
		fmt.Fprintln(w, "No counts in this range.")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tWINDOW\tTIER\tPRODUCED\tRECEIVED\tMISSING\tEXCESS\tDUPLICATES\tCOMPLETE%\tNO_TIME\tMALFORMED\tP50\tP99\tSTATUS")
		for _, row := range r.Rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\n", row.Topic, stamp(row.WindowStart), row.Tier,
				row.Produced, row.Received, row.Missing, row.Excess, row.Duplicates, pct(row.Completeness), row.NoTime, row.Malformed,
				latency(row.LatencyP50), latency(row.LatencyP99), row.Status)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Lost) > 0 {
		fmt.Fprintln(w, "\nLost monitoring events (not data loss: the counts of the windows they covered are incomplete):")
		for _, l := range r.Lost {
			fmt.Fprintf(w, "  %s\n", lostLine(l))
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	below := r.Below(o.Threshold)
	fmt.Fprintf(w, "\n%d closed windows below %s%%", len(below), pct(o.Threshold))
	if len(below) == 0 {
		_, err := fmt.Fprintln(w, ".")
		return err
	}
	fmt.Fprintln(w, ":")
	for _, row := range below {
		fmt.Fprintf(w, "  %s\n", BelowLine(row))
	}
	return nil
}

// BelowLine names a failing row the way a person reads it: topic, window,
// tier and how many events are missing or extra.
func BelowLine(row audit.Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "topic %s, window %s, tier %s: %d of %d missing (%s%% complete)",
		row.Topic, stamp(row.WindowStart), row.Tier, row.Missing, row.Produced, pct(row.Completeness))
	if row.Excess > 0 {
		fmt.Fprintf(&b, ", %d in excess", row.Excess)
	}
	if row.Duplicates > 0 {
		fmt.Fprintf(&b, ", %d duplicates", row.Duplicates)
	}
	return b.String()
}

// OverLine names a row with more duplicates or excess events than allowed.
func OverLine(row audit.Row) string {
	return fmt.Sprintf("topic %s, window %s, tier %s: %d duplicates, %d events in excess (not counted by any producer)",
		row.Topic, stamp(row.WindowStart), row.Tier, row.Duplicates, row.Excess)
}

func lostLine(l audit.LostEvent) string {
	if !l.Located {
		return fmt.Sprintf("tier %s, publisher %s, event %d: window unknown (no later event of this publisher names it)", l.Tier, l.Publisher, l.Sequence)
	}
	return fmt.Sprintf("tier %s, publisher %s, event %d: window %s, topics %s", l.Tier, l.Publisher, l.Sequence, stamp(l.Window), strings.Join(l.Topics, ", "))
}

// latency prints a latency in milliseconds short, "-" when not measured.
func latency(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.Duration(ms * int64(time.Millisecond)).String()
}
