package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
)

func init() {
	register("audit", "count tiers and report completeness against producers: audit count|report|serve|inspect|republish", runAudit)
}

func runAudit(ctx context.Context, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New(`which action? audit count|report|serve|inspect|republish [flags]
  count      count a cluster's topics by header time window and publish the counts as a tier
  report     compare every tier with the producers' counts and print completeness
  serve      serve the report as a live page that refreshes
  inspect    print what one tier's publishers stated, per topic, window and server
  republish  publish the warehouse tier's counts kept in a warehouse's committed load runs`)
	}
	action, args := args[0], args[1:]
	switch action {
	case "count":
		return runAuditCount(ctx, args)
	case "report":
		return runAuditReport(ctx, args)
	case "serve":
		return runAuditServe(ctx, args)
	case "inspect":
		return runAuditInspect(ctx, args)
	case "republish":
		return runAuditRepublish(ctx, args)
	}
	return fmt.Errorf("unknown audit action %q: use count, report, serve, inspect or republish", action)
}

// auditFlags are the flags every audit action shares.
type auditFlags struct {
	brokers, registry, topic, topics string
	window                           time.Duration
	sec                              clientFlags
}

func newAuditFlags(action, summary string) (*flag.FlagSet, *auditFlags) {
	fs := flag.NewFlagSet("tributary audit "+action, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: tributary audit %s [flags]\n  %s\n\nflags:\n", action, summary)
		fs.PrintDefaults()
	}
	addLogFormatFlag(fs)
	f := &auditFlags{}
	fs.StringVar(&f.brokers, "brokers", "127.0.0.1:9092", "comma-separated broker addresses")
	fs.StringVar(&f.registry, "registry", "http://127.0.0.1:8081", "schema registry `URL`")
	fs.StringVar(&f.topic, "audit-topic", audit.DefaultTopic, "topic of the monitoring events")
	fs.StringVar(&f.topics, "topics", "", "comma-separated topics (default: all)")
	fs.DurationVar(&f.window, "window", audit.DefaultWindow, "width of a counting window")
	f.sec.register(fs, true)
	return fs, f
}

func (f *auditFlags) registryClient() (*sr.Client, error) {
	return registryClient("--registry", f.registry, f.sec.registry)
}

// source is where the monitoring events are read: --brokers, reached with
// the security flags.
func (f *auditFlags) source(reg *sr.Client) (audit.Source, error) {
	opts, err := f.sec.kgoOpts()
	return audit.Source{Brokers: splitList(f.brokers), Registry: reg, Topic: f.topic, Opts: opts}, err
}

// timeRange reads --day, --from and --to. --day D is --from D --to D+24h.
type timeRange struct{ day, from, to string }

func (r *timeRange) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&r.day, "day", "", "the UTC `day` (YYYY-MM-DD) to "+what+"; shorthand for --from DAY --to DAY+24h")
	fs.StringVar(&r.from, "from", "", "first window to "+what+": RFC 3339, YYYY-MM-DD[THH:MM] (UTC), or relative to now like -24h")
	fs.StringVar(&r.to, "to", "", "end of the windows to "+what+" (exclusive), same forms and now")
}

func (r *timeRange) resolve(now time.Time) (from, to time.Time, err error) {
	if r.day != "" {
		if r.from != "" || r.to != "" {
			return from, to, errors.New("--day replaces --from and --to: give one or the other")
		}
		d, err := time.Parse("2006-01-02", r.day)
		if err != nil {
			return from, to, fmt.Errorf("--day %q: want YYYY-MM-DD", r.day)
		}
		return d, d.Add(24 * time.Hour), nil
	}
	if r.from != "" {
		if from, err = parseWhen(r.from, now); err != nil {
			return from, to, fmt.Errorf("--from: %w", err)
		}
	}
	if r.to != "" {
		if to, err = parseWhen(r.to, now); err != nil {
			return from, to, fmt.Errorf("--to: %w", err)
		}
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return from, to, fmt.Errorf("--from %s is not before --to %s", r.from, r.to)
	}
	return from, to, nil
}

// parseWhen reads a point in time the way people type one on a command
// line; times without a zone are UTC, like the windows.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		d, err := time.ParseDuration(s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: a relative time is a duration such as -24h or -90m", s)
		}
		return now.Add(d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: use RFC 3339 (2024-05-01T10:00:00Z), YYYY-MM-DD[THH:MM] in UTC, now, or -24h", s)
}

// writeOutput writes to --output, or stdout when it is empty or "-".
func writeOutput(path string, write func(f *os.File) error) error {
	if path == "" || path == "-" {
		return write(os.Stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
