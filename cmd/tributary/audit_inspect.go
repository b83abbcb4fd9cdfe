package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/tributary-io/tributary/audit"
)

// runAuditInspect prints what one tier stated: its publishers and its
// counts per topic, window and server.
func runAuditInspect(ctx context.Context, args []string) error {
	fs, f := newAuditFlags("inspect", "print what one tier's publishers stated: their monitoring events and the counts per topic, window and server")
	tier := fs.String("tier", "", "the tier to inspect, e.g. producer, mirror, warehouse (required)")
	var tr timeRange
	tr.register(fs, "inspect")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tier == "" {
		return errors.New("--tier is required")
	}
	now := time.Now()
	from, to, err := tr.resolve(now)
	if err != nil {
		return err
	}
	if from.IsZero() && to.IsZero() {
		from, to = audit.WindowStart(now.Add(-24*time.Hour), f.window), now
	}
	reg, err := f.registryClient()
	if err != nil {
		return err
	}
	src, err := f.source(reg)
	if err != nil {
		return err
	}
	st := audit.NewStore()
	since := time.Time{}
	if !from.IsZero() {
		since = from.Add(-time.Hour)
	}
	if _, err := audit.Load(ctx, src, since, st); err != nil {
		return err
	}
	in := st.Inspect(*tier, audit.Options{From: from, To: to, Window: f.window, Topics: splitList(f.topics), Now: now})
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "Tier %s: %d publishers\n", in.Tier, len(in.Publishers))
	fmt.Fprintln(w, "PUBLISHER\tHOST\tEVENTS\tSEQUENCES\tMISSING\tFINAL\tLAST PUBLISHED")
	for _, p := range in.Publishers {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d-%d\t%d\t%v\t%s\n", p.ID, p.Host, p.Events, p.First, p.Last, p.Missing, p.Final, p.LastPublished.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w, "\nTOPIC\tWINDOW\tSERVER\tCOUNT\tDISTINCT")
	for _, c := range in.Counts {
		d := "-"
		if c.Distinct >= 0 {
			d = fmt.Sprint(c.Distinct)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", c.Topic, c.Window.UTC().Format("2006-01-02 15:04"), c.Server, c.N, d)
	}
	return w.Flush()
}
