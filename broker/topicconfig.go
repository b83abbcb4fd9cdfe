package broker

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/tributary-io/tributary/broker/log"
)

// topicConfigs are the per-topic settings a user may give to CreateTopics
// (Kafka's names) and how each changes a partition's storage configuration.
var topicConfigs = map[string]func(c *log.Config, v int64) error{
	"retention.ms":    func(c *log.Config, v int64) error { c.RetentionAge = msOrForever(v); return nil },
	"retention.bytes": func(c *log.Config, v int64) error { c.RetentionBytes = v; return nil },
	"segment.bytes": func(c *log.Config, v int64) error {
		if v < 1024 || v > 1<<31-1 {
			return fmt.Errorf("segment.bytes must be between 1024 and %d", 1<<31-1)
		}
		c.SegmentBytes = v
		return nil
	},
	"segment.ms":           func(c *log.Config, v int64) error { return positive(&c.SegmentAge, "segment.ms", v) },
	"flush.messages":       func(c *log.Config, v int64) error { c.FlushMessages = max(v, 1); return nil },
	"flush.ms":             func(c *log.Config, v int64) error { return positive(&c.FlushInterval, "flush.ms", v) },
	"index.interval.bytes": func(c *log.Config, v int64) error { c.IndexIntervalBytes = max(v, 1); return nil },
}

// acceptedConfigs are Kafka topic settings that standard tools send and
// whose only meaningful value is the one Tributary always has; any other
// value is refused so that nobody believes they got what they asked for.
var acceptedConfigs = map[string]string{
	"cleanup.policy":                 "delete",
	"compression.type":               "producer",
	"message.timestamp.type":         "CreateTime",
	"min.insync.replicas":            "1",
	"unclean.leader.election.enable": "false",
}

func msOrForever(v int64) time.Duration {
	if v < 0 {
		return -1
	}
	return time.Duration(v) * time.Millisecond
}

func positive(d *time.Duration, name string, v int64) error {
	if v <= 0 {
		return fmt.Errorf("%s must be positive", name)
	}
	*d = time.Duration(v) * time.Millisecond
	return nil
}

// checkTopicConfigs validates a CreateTopics config set, naming the first
// offending key so the user can fix it.
func checkTopicConfigs(configs map[string]string) error {
	_, err := topicLogConfig(log.Config{}, configs)
	return err
}

// topicLogConfig applies a topic's configs on top of the broker's defaults.
func topicLogConfig(base log.Config, configs map[string]string) (log.Config, error) {
	c := base
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := configs[k]
		if want, ok := acceptedConfigs[k]; ok {
			if v != want {
				return c, fmt.Errorf("config %s=%s is not supported: Tributary only offers %s=%s", k, v, k, want)
			}
			continue
		}
		apply, ok := topicConfigs[k]
		if !ok {
			return c, fmt.Errorf("unknown topic config %q (supported: %s)", k, supportedConfigNames())
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("config %s=%q: not an integer", k, v)
		}
		if err := apply(&c, n); err != nil {
			return c, err
		}
	}
	return c, nil
}

func supportedConfigNames() string {
	var names []string
	for k := range topicConfigs {
		names = append(names, k)
	}
	for k := range acceptedConfigs {
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}
