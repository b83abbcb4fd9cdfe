package broker

// BROKER_LOGGER configs (kafka-configs --entity-type broker-loggers): the
// log level, read and changed at run time, so an operator can turn on
// debug lines on one broker of a running cluster and back off again.
//
// Tributary logs through one slog logger, so there is one logger to name:
// "root", Kafka's name for the logger every other inherits from. Its value
// is a Kafka level (TRACE, DEBUG, INFO, WARN, ERROR, FATAL; TRACE logs as
// DEBUG, FATAL as ERROR since slog has no levels beyond). SET changes it
// at once for the whole process; DELETE returns to the level the process
// started with. The change is not stored: a restart starts from TRIBUTARY_LOG
// again, as a Kafka broker starts from its log4j file. The resource name is
// the broker's id, as for BROKER configs.

import (
	"context"
	"log/slog"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaerr"
)

// rootLogger is the one logger name served.
const rootLogger = "root"

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

// kafkaLevelName is the Kafka name of the finest Kafka level at or above l.
func kafkaLevelName(l slog.Level) string {
	for _, k := range kafkaLevels {
		if l <= k.level {
			return k.name
		}
	}
	return "FATAL"
}

// currentLogLevel is the level in force: the LevelVar's, or for a broker
// without one, the finest its logger lets through.
func (b *Broker) currentLogLevel() slog.Level {
	if b.cfg.LogLevel != nil {
		return b.cfg.LogLevel.Level()
	}
	for _, k := range kafkaLevels {
		if b.logger.Enabled(context.Background(), k.level) {
			return k.level
		}
	}
	return slog.LevelError + 4
}

// brokerLoggerEntries describes the loggers of broker name.
func (b *Broker) brokerLoggerEntries(name string) ([]configEntry, error) {
	if err := b.checkBrokerResource(name); err != nil || name == "" {
		return nil, kafkaerr.New(kerr.InvalidRequest, "broker logger %q: name this broker's id (%d)", name, b.selfID)
	}
	return []configEntry{{
		name: rootLogger, value: kafkaLevelName(b.currentLogLevel()), typ: kmsg.ConfigTypeString,
		source: kmsg.ConfigSourceDynamicBrokerLoggerConfig, readOnly: b.cfg.LogLevel == nil,
	}}, nil
}

// alterBrokerLogger applies change to the loggers of broker name.
func (b *Broker) alterBrokerLogger(name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	if err := b.checkBrokerResource(name); err != nil || name == "" {
		return kafkaerr.New(kerr.InvalidRequest, "broker logger %q: name this broker's id (%d)", name, b.selfID)
	}
	cur := map[string]string{rootLogger: kafkaLevelName(b.currentLogLevel())}
	next, err := change(cur)
	if err != nil {
		return err
	}
	level := b.startLevel
	for k, v := range next {
		if k != rootLogger {
			return kafkaerr.New(kerr.InvalidConfig, "logger %q: Tributary has one logger, %q", k, rootLogger)
		}
		found := false
		for _, kl := range kafkaLevels {
			if strings.EqualFold(v, kl.name) {
				level, found = kl.level, true
			}
		}
		if !found {
			return kafkaerr.New(kerr.InvalidConfig, "logger %s: level %q is not one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL", k, v)
		}
	}
	if b.cfg.LogLevel == nil {
		return kafkaerr.New(kerr.InvalidRequest, "this broker's log level is fixed by the program that runs it (no Config.LogLevel); run it with the tributary command to change it at run time")
	}
	if validateOnly {
		return nil
	}
	if old := b.cfg.LogLevel.Level(); old != level {
		// Logged before the change, so that raising the level past WARN
		// does not hide the line that says so.
		b.logger.Warn("log level changed at run time", "from", kafkaLevelName(old), "to", kafkaLevelName(level))
		b.cfg.LogLevel.Set(level)
	}
	return nil
}
