package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/tributary-io/tributary/internal/logstorm"
)

// logFormat is how every command writes its log lines: "text" (slog's
// key=value lines, for people) or "json" (one JSON object per line, for
// log shippers that filter on topic, partition, group, client or api).
// TRIBUTARY_LOG_FORMAT sets the default, --log-format overrides it.
var logFormat = envLogFormat()

func envLogFormat() string {
	if f := strings.ToLower(os.Getenv("TRIBUTARY_LOG_FORMAT")); f == "json" {
		return f
	}
	return "text"
}

// logLevelVar is the level of every handler newLogHandler makes: the
// TRIBUTARY_LOG level at start, and a broker's BROKER_LOGGER config
// (kafka-configs --entity-type broker-loggers) changes it at run time.
var logLevelVar = func() *slog.LevelVar {
	v := new(slog.LevelVar)
	v.Set(logLevel())
	return v
}()

// newLogHandler is the handler of every log line the command writes to w, in
// the chosen format and at logLevelVar's level. A storm of one message
// (thousands of partitions logging the same event) is cut to its first
// lines and a count (internal/logstorm), except at debug level.
func newLogHandler(w io.Writer) slog.Handler {
	opts := &slog.HandlerOptions{Level: logLevelVar}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if logFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return logstorm.New(h, logstorm.DefaultBurst, logstorm.DefaultWindow, func() bool { return logLevelVar.Level() <= slog.LevelDebug })
}

// addLogFormatFlag gives a command's flag set --log-format. Setting it
// replaces the default logger at once, so every package that logs through
// slog.Default (broker, registry, loader, mirror, audit) follows it.
func addLogFormatFlag(fs *flag.FlagSet) {
	fs.Func("log-format", "log line format: text or json (default from TRIBUTARY_LOG_FORMAT, else text)", func(s string) error {
		switch s {
		case "text", "json":
			logFormat = s
			slog.SetDefault(slog.New(newLogHandler(os.Stderr)))
			return nil
		}
		return fmt.Errorf("unknown log format %q: want text or json", s)
	})
}
