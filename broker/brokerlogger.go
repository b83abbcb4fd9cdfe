package broker

// BROKER_LOGGER configs on this broker: broker/brokerlogger has the
// levels and their rules; the root checks that a request names this
// broker (its id, as for BROKER configs) and holds the level at start.

import (
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/brokerlogger"
	"github.com/tributary-io/tributary/broker/kafkaerr"
)

// loggers are b's loggers.
func (b *Broker) loggers() brokerlogger.Loggers {
	return brokerlogger.Loggers{Var: b.cfg.LogLevel, Logger: b.logger, Start: b.startLevel}
}

// currentLogLevel is the level in force.
func (b *Broker) currentLogLevel() slog.Level { return b.loggers().Current() }

// checkLoggerResource accepts this broker's id, and not "": loggers have
// no cluster-wide default.
func (b *Broker) checkLoggerResource(name string) error {
	if err := b.checkBrokerResource(name); err != nil || name == "" {
		return kafkaerr.New(kerr.InvalidRequest, "broker logger %q: name this broker's id (%d)", name, b.selfID)
	}
	return nil
}

// brokerLoggerEntries describes the loggers of broker name.
func (b *Broker) brokerLoggerEntries(name string) ([]configEntry, error) {
	if err := b.checkLoggerResource(name); err != nil {
		return nil, err
	}
	l := b.loggers()
	return []configEntry{{
		name: brokerlogger.Root, value: l.Levels()[brokerlogger.Root], typ: kmsg.ConfigTypeString,
		source: kmsg.ConfigSourceDynamicBrokerLoggerConfig, readOnly: l.ReadOnly(),
	}}, nil
}

// alterBrokerLogger applies change to the loggers of broker name.
func (b *Broker) alterBrokerLogger(name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	if err := b.checkLoggerResource(name); err != nil {
		return err
	}
	return b.loggers().Alter(validateOnly, change)
}
