package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tributary-io/tributary/jobs"
)

func init() {
	register("jobs", "scheduled load jobs from spec files: run NAME | daemon | list | history NAME | check", runJobs)
}

const jobsUsage = `usage: tributary jobs <subcommand> [flags]

  run NAME       run a job once now (retrying a failed run as its spec says)
  daemon         run every job on its schedule until interrupted
  list           list the jobs, their schedules and last outcomes
  history NAME   show a job's past runs
  check          validate the spec files

Every subcommand takes --dir (default ./jobs): the directory of *.yaml
specs. See 'tributary jobs <subcommand> -h' and testdata/jobs/ for the
spec format.
`

func runJobs(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(os.Stderr, jobsUsage)
		return flag.ErrHelp
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("tributary jobs "+sub, flag.ContinueOnError)
	addLogFormatFlag(fs)
	dir := fs.String("dir", "jobs", "directory of job spec files (*.yaml)")
	stateDir := fs.String("state-dir", jobs.DefaultStateDir(), "where attempts that could not reach their warehouse are recorded")
	switch sub {
	case "run":
		noRetry := fs.Bool("no-retry", false, "make one attempt only")
		if err := parseWithName(fs, args, 1); err != nil {
			return err
		}
		spec, err := findJob(*dir, fs.Arg(0))
		if err != nil {
			return err
		}
		if *noRetry {
			zero := 0
			spec.Retry.Attempts = &zero
		}
		r := &jobs.Runner{StateDir: *stateDir, Fault: faultFromEnv(), Holder: "tributary jobs run"}
		entries, err := r.Run(ctx, spec, "manual")
		for _, e := range entries {
			printEntry(os.Stdout, e)
		}
		if err != nil {
			return err
		}
		if last := entries[len(entries)-1]; len(last.Lost) > 0 {
			return exitError(exitDataLoss)
		}
		return nil
	case "daemon":
		metricsListen := metricsFlag(fs)
		if err := parseWithName(fs, args, 0); err != nil {
			return err
		}
		specs, err := jobs.LoadDir(*dir)
		if err != nil {
			return err
		}
		if len(specs) == 0 {
			return fmt.Errorf("no job specs (*.yaml) in %s", *dir)
		}
		for _, s := range specs {
			slog.Info("job scheduled", "job", s.Name, "schedule", s.Schedule, "next", s.Sched.Next(time.Now()).Format(time.RFC3339))
		}
		ms, stopMetrics, err := startMetrics(*metricsListen)
		if err != nil {
			return err
		}
		defer stopMetrics()
		jm := jobs.NewMetrics()
		ms.Registry().MustRegister(jm)
		d := &jobs.Daemon{Runner: &jobs.Runner{StateDir: *stateDir, Fault: faultFromEnv(), Holder: "tributary jobs daemon", Metrics: jm}, Specs: specs}
		return d.Run(ctx)
	case "list":
		if err := parseWithName(fs, args, 0); err != nil {
			return err
		}
		specs, err := jobs.LoadDir(*dir)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSCHEDULE\tNEXT\tTOPICS\tWAREHOUSE\tLAST RUN")
		for _, s := range specs {
			last := "never"
			if h, err := jobs.History(s, *stateDir, 1); err != nil && len(h) == 0 {
				last = "? (" + firstLine(err.Error()) + ")"
			} else if len(h) > 0 {
				e := h[len(h)-1]
				last = fmt.Sprintf("%s %s, %d records", e.Started.Local().Format("2006-01-02 15:04:05"), e.Outcome, e.Records)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Schedule, s.Sched.Next(time.Now()).Local().Format("2006-01-02 15:04:05"), s.Topics, s.Warehouse, last)
		}
		return tw.Flush()
	case "history":
		limit := fs.Int("limit", 20, "show the last this many attempts (0: all)")
		asJSON := fs.Bool("json", false, "print the attempts as JSON, one per line")
		if err := parseWithName(fs, args, 1); err != nil {
			return err
		}
		spec, err := findJob(*dir, fs.Arg(0))
		if err != nil {
			return err
		}
		entries, herr := jobs.History(spec, *stateDir, *limit)
		if herr != nil {
			fmt.Fprintf(os.Stderr, "tributary jobs history: %v (showing local entries only)\n", herr)
		}
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			for _, e := range entries {
				enc.Encode(e)
			}
			return nil
		}
		if len(entries) == 0 {
			fmt.Printf("job %s has not run yet\n", spec.Name)
			return nil
		}
		for _, e := range entries {
			printEntry(os.Stdout, e)
		}
		return nil
	case "check":
		if err := parseWithName(fs, args, 0); err != nil {
			return err
		}
		specs, err := jobs.LoadDir(*dir)
		if err != nil {
			return err
		}
		for _, s := range specs {
			fmt.Printf("%s: job %s ok (%s, next run %s)\n", s.File, s.Name, s.Schedule, s.Sched.Next(time.Now()).Local().Format(time.RFC3339))
		}
		return nil
	}
	fmt.Fprintf(os.Stderr, "tributary jobs: unknown subcommand %q\n\n%s", sub, jobsUsage)
	return exitError(2)
}

// parseWithName parses flags that may come before or after the job name.
func parseWithName(fs *flag.FlagSet, args []string, names int) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != names {
		if names == 1 {
			return fmt.Errorf("%s: give one job name", fs.Name())
		}
		return fmt.Errorf("%s takes no arguments, got %v", fs.Name(), positional)
	}
	return fs.Parse(positional) // leaves them in fs.Args()
}

func findJob(dir, name string) (*jobs.Spec, error) {
	specs, err := jobs.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	return jobs.Find(specs, name)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func printEntry(w *os.File, e *jobs.Entry) {
	d := e.Finished.Sub(e.Started).Round(time.Millisecond)
	fmt.Fprintf(w, "%s  %-9s  %s  attempt %d (%s) on %s pid %d, %v\n", e.Started.Local().Format("2006-01-02 15:04:05"),
		e.Outcome, e.Run, e.Attempt, e.Trigger, e.Host, e.PID, d)
	if e.Outcome == jobs.Committed {
		fmt.Fprintf(w, "    %d records, %d files, %s written, %s read, %d undecodable\n", e.Records, e.Files, mib(e.Bytes), mib(e.InputBytes), e.Errors)
		var offs []string
		for _, p := range e.Partitions {
			offs = append(offs, fmt.Sprintf("%s/%d %d-%d", p.Topic, p.Partition, p.From, p.To))
		}
		if len(offs) > 0 {
			fmt.Fprintf(w, "    offsets %s\n", strings.Join(offs, ", "))
		}
	}
	for _, l := range e.Lost {
		fmt.Fprintf(w, "    LOST %s\n", l)
	}
	if e.Error != "" {
		fmt.Fprintf(w, "    error: %s\n", e.Error)
	}
}
