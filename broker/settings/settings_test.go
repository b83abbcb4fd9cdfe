package settings

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/topicconfig"
)

// TestBeforeLoadTheFlagsDecide: until the dynamic configs are read (the
// broker's New opens partitions before), every setting is the flags'.
func TestBeforeLoadTheFlagsDecide(t *testing.T) {
	b := New(Config{Static: brokerconfig.Settings{
		Topic:    topicconfig.Settings{MaxMessageBytes: 123, MinISR: 2},
		MaxConns: 7, MaxConnsPerIP: 3,
		LeaderThrottleRate: math.MaxInt64, FollowerThrottleRate: math.MaxInt64,
	}})
	if got := b.TopicDefaults(); got.MaxMessageBytes != 123 || got.MinISR != 2 {
		t.Errorf("topic defaults %+v, want the flags'", got)
	}
	if got := b.TopicSettingsOf(map[string]string{"min.insync.replicas": "1"}); got.MinISR != 1 || got.MaxMessageBytes != 123 {
		t.Errorf("a topic's own config over the flags: %+v", got)
	}
	if maxConns, perIP := b.ConnLimits(); maxConns != 7 || perIP != brokerconfig.PerIPLimit(7, 3) {
		t.Errorf("connection limits %d, %d", maxConns, perIP)
	}
	if leader, follower := b.ThrottleRates(); leader != math.MaxInt64 || follower != math.MaxInt64 {
		t.Errorf("throttle rates %d, %d: unthrottled before any is set", leader, follower)
	}
}

// TestTopicBounds: a value that parses but that the broker would not
// survive is refused with INVALID_CONFIG, naming the setting.
func TestTopicBounds(t *testing.T) {
	b := New(Config{MaxRequestBytes: 1 << 20})
	for _, c := range []struct {
		configs  map[string]string
		replicas int
		ok       bool
	}{
		{map[string]string{"segment.ms": "1"}, 1, false},
		{map[string]string{"retention.ms": "0"}, 1, false},
		{map[string]string{"retention.ms": "-1"}, 1, true},
		{map[string]string{"retention.bytes": "1023"}, 1, false},
		{map[string]string{"max.message.bytes": "1048577"}, 1, false},
		{map[string]string{"max.message.bytes": "1048576"}, 1, true},
		{map[string]string{"min.insync.replicas": "3"}, 2, false},
		{map[string]string{"min.insync.replicas": "2"}, 2, true},
	} {
		err := b.CheckTopicBounds(c.configs, c.replicas)
		if c.ok != (err == nil) {
			t.Errorf("%v with %d replicas: %v", c.configs, c.replicas, err)
			continue
		}
		if err != nil && kafkaerr.Code(err) != kerr.InvalidConfig.Code {
			t.Errorf("%v: code %d, want INVALID_CONFIG", c.configs, kafkaerr.Code(err))
		}
	}
}
