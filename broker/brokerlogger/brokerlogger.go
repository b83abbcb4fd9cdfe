// Package brokerlogger is Kafka's BROKER_LOGGER config resource on
// Tributary (kafka-configs --entity-type broker-loggers): the log level,
// read and changed at run time, so an operator can turn on debug lines on
// one broker of a running cluster and back off again.
//
// Tributary logs through one slog logger, so there is one logger to name:
// "root" (Root), Kafka's name for the logger every other inherits from.
// Its value is a Kafka level (TRACE, DEBUG, INFO, WARN, ERROR, FATAL;
// TRACE logs as DEBUG, FATAL as ERROR since slog has no levels beyond).
// SET changes it at once for the whole process; DELETE returns to the level
// the process started with. The change is not stored: a restart starts
// from TRIBUTARY_LOG again, as a Kafka broker starts from its log4j file.
// Which broker a request names is the broker's to check; errors here are
// broker/kafkaerr's, with the code a request gets.
package brokerlogger

import (
	"context"
	"log/slog"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/kafkaerr"
)

// Root is the one logger name served.
const Root = "root"

// kafkaLevels maps Kafka's level names to slog levels, finest first.
var kafkaLevels = []struct {
	name  string
	level slog.Level
}{
	{"TRACE", slog.LevelDebug - 4},
	{"DEBUG", slog.LevelDebug},
	{"INFO", slog.LevelInfo},
	{"WARN", slog.LevelWarn},
	{"ERROR", slog.LevelError},
	{"FATAL", slog.LevelError + 4},
}

// Name is the Kafka name of the finest Kafka level at or above l.
func Name(l slog.Level) string {
	for _, k := range kafkaLevels {
		if l <= k.level {
			return k.name
		}
	}
	return "FATAL"
}

// Parse is the slog level of a Kafka level name, in any case.
func Parse(name string) (slog.Level, bool) {
	for _, k := range kafkaLevels {
		if strings.EqualFold(name, k.name) {
			return k.level, true
		}
	}
	return 0, false
}

// Loggers are a broker's loggers.
type Loggers struct {
	// Var is the level the broker's handler filters by; nil when the
	// program running the broker fixed it, which makes the level
	// read-only.
	Var *slog.LevelVar
	// Logger is the broker's logger.
	Logger *slog.Logger
	// Start is the level at start, which DELETE returns to.
	Start slog.Level
}

// Current is the level in force: Var's, or without one, the finest the
// logger lets through.
func (l Loggers) Current() slog.Level {
	if l.Var != nil {
		return l.Var.Level()
	}
	for _, k := range kafkaLevels {
		if l.Logger.Enabled(context.Background(), k.level) {
			return k.level
		}
	}
	return slog.LevelError + 4
}

// Levels are the loggers and their Kafka levels, as DescribeConfigs
// reports them.
func (l Loggers) Levels() map[string]string {
	return map[string]string{Root: Name(l.Current())}
}

// ReadOnly reports whether the level is fixed (no Var).
func (l Loggers) ReadOnly() bool { return l.Var == nil }

// Alter applies change (AlterConfigs' or IncrementalAlterConfigs' edit of
// the current levels) and sets the level it leaves, or Start when it
// leaves none. validateOnly checks without setting.
func (l Loggers) Alter(validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	next, err := change(l.Levels())
	if err != nil {
		return err
	}
	level := l.Start
	for k, v := range next {
		if k != Root {
			return kafkaerr.New(kerr.InvalidConfig, "logger %q: Tributary has one logger, %q", k, Root)
		}
		var ok bool
		if level, ok = Parse(v); !ok {
			return kafkaerr.New(kerr.InvalidConfig, "logger %s: level %q is not one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL", k, v)
		}
	}
	if l.Var == nil {
		return kafkaerr.New(kerr.InvalidRequest, "this broker's log level is fixed by the program that runs it (no Config.LogLevel); run it with the tributary command to change it at run time")
	}
	if validateOnly {
		return nil
	}
	if old := l.Var.Level(); old != level {
		// Logged before the change, so that raising the level past WARN
		// does not hide the line that says so.
		l.Logger.Warn("log level changed at run time", "from", Name(old), "to", Name(level))
		l.Var.Set(level)
	}
	return nil
}
