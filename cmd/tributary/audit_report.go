package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/report"
)

// reportFlags are the flags report and serve share.
type reportFlags struct {
	tiers, expect string
	grace         time.Duration
}

func (r *reportFlags) register(fs *flag.FlagSet, judged string) {
	fs.StringVar(&r.tiers, "tiers", "", "comma-separated tiers to report (default: all that published)")
	fs.StringVar(&r.expect, "expect", "", "comma-separated tiers every topic is expected in (default: for each topic, the tiers that ever counted it, so a topic loaded without --audit has no warehouse rows)")
	fs.DurationVar(&r.grace, "grace", audit.DefaultGrace, "windows that ended less than this ago are open: "+judged)
}

func (r *reportFlags) options(f *auditFlags, from, to, now time.Time) audit.Options {
	return audit.Options{From: from, To: to, Window: f.window, Topics: splitList(f.topics), Tiers: splitList(r.tiers), Expect: splitList(r.expect), Grace: r.grace, Now: now}
}

func runAuditReport(ctx context.Context, args []string) error {
	fs, f := newAuditFlags("report", "compare every tier with the producers' counts and print completeness")
	var rf reportFlags
	rf.register(fs, "reported, never judged")
	format := fs.String("format", "table", "table, json, csv or html")
	output := fs.String("output", "", "write the report to this file (default: stdout)")
	failBelow := fs.Float64("fail-below", 0, "exit with status 1 when a closed window of a tier is below this completeness in percent, e.g. 99.9, or has more duplicates or excess events than --max-excess")
	maxExcess := fs.Int64("max-excess", 0, "with --fail-below: the duplicates, and apart the excess events (counted by no producer), a closed window of a tier may hold")
	problems := fs.Bool("problems-only", false, "print only rows that are not ok (every format)")
	scanFrom := fs.String("scan-from", "", "read monitoring events published since this time (default: an hour before --from)")
	var tr timeRange
	tr.register(fs, "report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !slices.Contains(report.Formats, *format) {
		return fmt.Errorf("--format %q: use table, json, csv or html", *format)
	}
	now := time.Now()
	from, to, err := tr.resolve(now)
	if err != nil {
		return err
	}
	if from.IsZero() && to.IsZero() {
		from, to = audit.WindowStart(now.Add(-24*time.Hour), f.window), now
	}
	since := time.Time{}
	if !from.IsZero() {
		since = from.Add(-time.Hour)
	}
	if *scanFrom != "" {
		if since, err = parseWhen(*scanFrom, now); err != nil {
			return fmt.Errorf("--scan-from: %w", err)
		}
	}
	reg, err := f.registryClient()
	if err != nil {
		return err
	}
	st := audit.NewStore()
	src, err := f.source(reg)
	if err != nil {
		return err
	}
	n, err := audit.Load(ctx, src, since, st)
	if err != nil {
		return err
	}
	rep := st.Report(rf.options(f, from, to, now))
	slog.Debug("audit report", "monitoring_events", n, "rows", len(rep.Rows))
	if *problems {
		rep.Rows = slices.DeleteFunc(rep.Rows, func(r audit.Row) bool { return r.Status == audit.StatusOK })
	}
	opts := report.Options{Threshold: *failBelow}
	if err := writeOutput(*output, func(w *os.File) error { return report.Write(w, *format, rep, opts) }); err != nil {
		return err
	}
	for _, l := range rep.Lost {
		fmt.Fprintf(os.Stderr, "warning: monitoring event %d of %s (tier %s) was lost; the windows it covered are marked monitoring-lost, not judged\n", l.Sequence, l.Publisher, l.Tier)
	}
	if *failBelow <= 0 {
		return nil
	}
	below, over := rep.Below(*failBelow), rep.Over(*maxExcess)
	if len(below) == 0 && len(over) == 0 {
		if !slices.ContainsFunc(rep.Rows, func(r audit.Row) bool { return r.Tier != rep.Baseline && r.Closed() }) {
			fmt.Fprintln(os.Stderr, "warning: no closed window of any tier in this range: nothing was judged")
		}
		return nil
	}
	if len(below) > 0 {
		fmt.Fprintf(os.Stderr, "%d closed windows below %v%%:\n", len(below), *failBelow)
		for _, r := range below {
			fmt.Fprintf(os.Stderr, "  %s\n", report.BelowLine(r))
		}
	}
	if len(over) > 0 {
		fmt.Fprintf(os.Stderr, "%d closed windows with more than %d duplicates or excess events:\n", len(over), *maxExcess)
		for _, r := range over {
			fmt.Fprintf(os.Stderr, "  %s\n", report.OverLine(r))
		}
	}
	return exitError(1)
}

func runAuditServe(ctx context.Context, args []string) error {
	fs, f := newAuditFlags("serve", "serve the completeness report as a live page that refreshes")
	var rf reportFlags
	rf.register(fs, "shown, never judged")
	listen := fs.String("listen", "127.0.0.1:8090", "HTTP listen address")
	last := fs.Duration("last", 24*time.Hour, "report the windows of this long before now")
	threshold := fs.Float64("threshold", report.DefaultThreshold, "completeness in percent a closed window should reach (colours the page)")
	refresh := fs.Duration("refresh", 30*time.Second, "how often the page reloads itself")
	retain := fs.Duration("retain", audit.DefaultRetain, "forget windows (and the ids of their monitoring events) that ended longer ago than this, so memory stays bounded; at least --last")
	metricsListen := metricsFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *retain < *last+f.window {
		return fmt.Errorf("--retain %v is shorter than --last %v plus a window: the page would show windows already forgotten", *retain, *last)
	}
	reg, err := f.registryClient()
	if err != nil {
		return err
	}
	st := audit.NewRetainingStore(*retain, time.Now)
	var ready atomic.Bool
	src, err := f.source(reg)
	if err != nil {
		return err
	}
	since := time.Now().Add(-*last - time.Hour)
	followErr := make(chan error, 1)
	go func() {
		followErr <- audit.Follow(ctx, src, since, st, func() {
			ready.Store(true)
			slog.Info("audit serve: caught up with the audit topic", "topic", f.topic)
		})
	}()
	live := &report.Live{
		Store: st,
		Options: func(now time.Time) audit.Options {
			return rf.options(f, audit.WindowStart(now.Add(-*last), f.window), now, now)
		},
		Page:  report.Options{Threshold: *threshold, Refresh: *refresh},
		Ready: ready.Load,
	}
	ms, stopMetrics, err := startMetrics(*metricsListen)
	if err != nil {
		return err
	}
	defer stopMetrics()
	ms.Registry().MustRegister(audit.Metrics(func() *audit.Report { return st.Report(live.Options(time.Now())) }, *threshold))
	ms.AddReadyCheck("audit_topic", func() error {
		if !ready.Load() {
			return errors.New("still reading the audit topic")
		}
		return nil
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", *listen, err)
	}
	srv := &http.Server{Handler: live, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("tributary audit serve: http://%s/ (also /report.json, /report.csv)\n", ln.Addr())
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-followErr:
		if err != nil {
			srv.Close()
			return fmt.Errorf("reading the audit topic: %w", err)
		}
	case err := <-serveErr:
		return err
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
