package settings

// Safe ranges of topic configs. A config value that parses is not always
// one the broker survives: segment.ms=1 rolls a segment per batch until the
// process runs out of file descriptors and every other topic's produce
// fails; retention 0 deletes each segment as it is sealed;
// max.message.bytes past the request size promises batches no request can
// carry. Those values are refused with INVALID_CONFIG naming the bound when
// a topic or a broker default is set. Values stored before these bounds
// existed are still read (topic.go), so an upgraded broker opens
// every topic it had.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/topicconfig"
)

// configFloor is the smallest accepted value of a numeric topic config;
// forever says -1 ("no limit") is accepted too.
type configFloor struct {
	min     int64
	forever bool
	why     string
}

var topicConfigFloors = map[string]configFloor{
	"segment.ms": {topicconfig.MinSegmentMs, false,
		"a smaller value rolls a segment per batch and holds a file descriptor per segment"},
	"retention.ms": {1000, true,
		"a smaller value deletes each segment as it is sealed; use DeleteRecords to empty a topic"},
	"retention.bytes": {1024, true,
		"a smaller value deletes each segment as it is sealed; use DeleteRecords to empty a topic"},
}

// topicBounds is what the safe ranges depend on beyond the value itself.
type topicBounds struct {
	maxRequestBytes int32 // a batch must fit in one request
	replicas        int   // the topic's replication factor; 0: not a topic
}

// checkConfigBounds checks the topic configs set in configs (already
// parsed by their definitions) against the safe ranges. scale converts a
// key's unit to the topic config's (log.roll.hours), and topicName maps a
// key to the topic config it sets.
func checkConfigBounds(configs map[string]string, bounds topicBounds, topicName func(key string) (string, int64)) error {
	for key, v := range configs {
		name, scale := topicName(key)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue // not an integer config (checked by its definition)
		}
		if n > 0 {
			n *= scale
		}
		if f, ok := topicConfigFloors[name]; ok && n < f.min && !(f.forever && n == -1) {
			alt := ""
			if f.forever {
				alt = " or -1"
			}
			return kafkaerr.New(kerr.InvalidConfig, "config %s=%s: %s must be at least %d%s: %s", key, v, name, f.min, alt, f.why)
		}
		switch {
		case name == "max.message.bytes" && bounds.maxRequestBytes > 0 && n > int64(bounds.maxRequestBytes):
			return kafkaerr.New(kerr.InvalidConfig, "config %s=%s: must be at most %d, the broker's largest request (--max-request-bytes): a larger batch could never be sent", key, v, bounds.maxRequestBytes)
		case name == "min.insync.replicas" && bounds.replicas > 0 && n > int64(bounds.replicas):
			return kafkaerr.New(kerr.InvalidConfig, "config %s=%s: must be at most the topic's replication factor %d, or no acks=all produce could ever succeed", key, v, bounds.replicas)
		}
	}
	return nil
}

// CheckTopicBounds checks a topic's own configs, for a topic with the
// given replication factor; an error is broker/kafkaerr's.
func (b *Broker) CheckTopicBounds(configs map[string]string, replicas int) error {
	return checkConfigBounds(configs, topicBounds{maxRequestBytes: b.maxRequestBytes, replicas: replicas},
		func(key string) (string, int64) { return key, 1 })
}

// checkBrokerConfigBounds checks the broker defaults of topic configs set
// in one level of dynamic broker configs.
func (b *Broker) checkBrokerConfigBounds(configs map[string]string) error {
	return checkConfigBounds(configs, topicBounds{maxRequestBytes: b.maxRequestBytes},
		func(key string) (string, int64) {
			d, ok := brokerconfig.Of(key)
			if !ok {
				return "", 1
			}
			return d.Topic, brokerconfig.UnitMs(key)
		})
}

// replicasOf is a topic's replication factor (one in standalone).
func replicasOf(replicas [][]int32) int {
	if len(replicas) == 0 || len(replicas[0]) == 0 {
		return 1
	}
	return len(replicas[0])
}
