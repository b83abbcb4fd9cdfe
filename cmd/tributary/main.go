// Command tributary is the one binary of Tributary: the broker, the schema
// registry and the tools around them, one subcommand each.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand: its one-line summary and its entry point,
// which receives the arguments after the subcommand's name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	slog.SetDefault(slog.New(newLogHandler(os.Stderr)))
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "tributary: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(int(ee))
		}
		fmt.Fprintf(os.Stderr, "tributary %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// exitError ends the program with a status and no message (the command has
// already said what it had to).
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func usage() {
	fmt.Fprintln(os.Stderr, "usage: tributary <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-16s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'tributary <command> -h' for a command's flags. TRIBUTARY_LOG=debug|info|warn|error sets the log level; --log-format json (or TRIBUTARY_LOG_FORMAT=json) writes log lines as JSON.")
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(os.Getenv("TRIBUTARY_LOG")))); err != nil {
		return slog.LevelInfo
	}
	return l
}

// newFlags returns a flag set for a subcommand that prints its usage with
// the command's summary.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("tributary "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: tributary %s [flags]\n  %s\n\nflags:\n", name, commands[name].summary)
		fs.PrintDefaults()
	}
	addLogFormatFlag(fs)
	return fs
}
