package broker

// DescribeConfigs (key 32), v0-4.
//
// Topics report the effective value of every setting of topicconfig.go:
// the topic's own value (DYNAMIC_TOPIC_CONFIG) or the broker's default
// (STATIC_BROKER_CONFIG). Brokers report no settings: they are command-line
// flags, listed by `tributary standalone -h`. Synonyms and documentation
// are not sent.

import (
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
)

func (b *Broker) describeConfigs(req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, code := b.lookupTopic(rr.ResourceName, false)
			if code != 0 {
				sr.ErrorCode = code
				break
			}
			effective, err := topicLogConfig(b.cfg.Log.WithDefaults(), t.Configs)
			if err != nil {
				sr.ErrorCode = kerr.InvalidConfig.Code
				msg := err.Error()
				sr.ErrorMessage = &msg
				break
			}
			sr.Configs = describeTopic(effective, t.Configs, rr.ConfigNames)
		case kmsg.ConfigResourceTypeBroker:
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			msg := "Tributary describes topic and broker configs only"
			sr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func describeTopic(c log.Config, set map[string]string, names []string) []kmsg.DescribeConfigsResponseResourceConfig {
	values := map[string]string{
		"retention.ms":         durationMs(c.RetentionAge),
		"retention.bytes":      strconv.FormatInt(c.RetentionBytes, 10),
		"segment.bytes":        strconv.FormatInt(c.SegmentBytes, 10),
		"segment.ms":           durationMs(c.SegmentAge),
		"flush.messages":       strconv.FormatInt(c.FlushMessages, 10),
		"flush.ms":             durationMs(c.FlushInterval),
		"index.interval.bytes": strconv.FormatInt(c.IndexIntervalBytes, 10),
	}
	for k, v := range acceptedConfigs {
		values[k] = v
	}
	wanted := func(string) bool { return true }
	if names != nil {
		want := map[string]bool{}
		for _, n := range names {
			want[n] = true
		}
		wanted = func(n string) bool { return want[n] }
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for name, v := range values {
		if !wanted(name) {
			continue
		}
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name = name
		rc.Value = &v
		rc.ConfigType = kmsg.ConfigTypeLong
		if _, ok := acceptedConfigs[name]; ok {
			rc.ConfigType = kmsg.ConfigTypeString
		}
		if _, ok := set[name]; ok {
			rc.Source = kmsg.ConfigSourceDynamicTopicConfig
		} else {
			rc.IsDefault = true
			rc.Source = kmsg.ConfigSourceStaticBrokerConfig
		}
		out = append(out, rc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func durationMs(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}
