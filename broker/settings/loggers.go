package settings

// BROKER_LOGGER configs on this broker: broker/brokerlogger has the
// levels and their rules; here a request is checked to name this broker
// (its id, as for BROKER configs).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/brokerlogger"
	"github.com/tributary-io/tributary/broker/configapi"
	"github.com/tributary-io/tributary/broker/kafkaerr"
)

// checkLoggerResource accepts this broker's id, and not "": loggers have
// no cluster-wide default.
func (b *Broker) checkLoggerResource(name string) error {
	if err := b.checkBrokerResource(name); err != nil || name == "" {
		return kafkaerr.New(kerr.InvalidRequest, "broker logger %q: name this broker's id (%d)", name, b.self)
	}
	return nil
}

// LoggerConfigs implements configapi.Settings: the loggers of broker
// name.
func (b *Broker) LoggerConfigs(name string) ([]configapi.Entry, error) {
	if err := b.checkLoggerResource(name); err != nil {
		return nil, err
	}
	return []configapi.Entry{{
		Name: brokerlogger.Root, Value: b.loggers.Levels()[brokerlogger.Root], Type: kmsg.ConfigTypeString,
		Source: kmsg.ConfigSourceDynamicBrokerLoggerConfig, ReadOnly: b.loggers.ReadOnly(),
	}}, nil
}

// AlterLoggerConfigs applies change to the loggers of broker name; an
// error is broker/kafkaerr's.
func (b *Broker) AlterLoggerConfigs(name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	if err := b.checkLoggerResource(name); err != nil {
		return err
	}
	return b.loggers.Alter(validateOnly, change)
}
