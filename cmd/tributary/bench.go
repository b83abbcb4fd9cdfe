package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/tributary-io/tributary/bench"
)

func init() {
	register("bench", "rerun the paper's benchmarks against Tributary and the peers this machine can start", runBench)
}

func runBench(ctx context.Context, args []string) error {
	fs := newFlags("bench")
	cfg := bench.Config{Logger: slog.Default()}
	fs.IntVar(&cfg.Messages, "messages", 10_000_000, "messages per producer row (the paper: 10 million)")
	systems := fs.String("systems", "", "comma-separated systems to measure (default: all of "+strings.Join(bench.AllSystems, ",")+"; tributary always runs, tributary-rf3 too with any other three-node system)")
	tests := fs.String("tests", "", "comma-separated tests to run (default: all of "+strings.Join(bench.AllTests, ",")+"; consume needs produce), e.g. latency")
	format := fs.String("format", "table", "output on stdout: table or json")
	out := fs.String("out", "", "also write bench.txt, bench.json and bench.svg into this directory")
	fs.DurationVar(&cfg.RowTime, "row-time", 0, "stop a producer or consumer row after this long and report what it did (default 20s)")
	fs.IntVar(&cfg.LatencyRate, "latency-rate", 0, "messages per second in the latency test (default 1000)")
	fs.DurationVar(&cfg.LatencyTime, "latency-time", 0, "length of the latency test (default 5s)")
	fs.StringVar(&cfg.Scripts, "scripts", "scripts/bench", "directory of peer.sh, which starts and stops the peers")
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "where the systems keep their data (default: a temporary directory)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the work directory (data and peer logs) afterwards")
	tribArgs := fs.String("tributary-args", "", "extra flags for the Tributary brokers (standalone, and each broker of tributary-rf3), space-separated (e.g. \"--flush-interval 10ms\")")
	fs.StringVar(&cfg.BaselineBinary, "baseline", "", "the build of Tributary "+bench.BaselineCommit+" that the capacity test compares with (scripts/bench/build-baseline.sh prints its path; make bench passes it)")
	fs.DurationVar(&cfg.CapacityTime, "capacity-time", 0, "how long each row of the capacity test sends (default 5s)")
	fs.IntVar(&cfg.Rounds, "rounds", 0, "rounds of the capacity test, each starting every system in turn (default 3)")
	fs.StringVar(&cfg.ProfileDir, "profile", "", "write a perf profile of the Tributary broker per row into this directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("--format %q: use table or json", *format)
	}
	if *systems != "" {
		cfg.Systems = splitList(*systems)
	}
	if *tests != "" {
		cfg.Tests = splitList(*tests)
	}
	cfg.TributaryArgs = strings.Fields(*tribArgs)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.TributaryBinary = self

	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := rep.WriteFiles(*out); err != nil {
			return err
		}
		slog.Info("bench results written", "dir", *out)
	}
	if *format == "json" {
		return rep.WriteJSON(os.Stdout)
	}
	return rep.WriteTable(os.Stdout)
}
