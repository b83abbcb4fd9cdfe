package mirror

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic configs travel with the topic: the ones a source topic sets itself
// (not broker defaults) among carriedConfigs are given to the target topic
// when the mirror creates it, and every Config.TopicSyncInterval the mirror sets in
// the target what changed in the source, and grows target topics whose
// source grew (see target.ensureTopic).

// carriedConfigs are the topic configs that describe the data (how long it
// is kept, how it is compacted and compressed, how large a record may be),
// which the analysis copy should share. Replication settings are the target
// cluster's own business.
var carriedConfigs = map[string]bool{
	"retention.ms": true, "retention.bytes": true, "cleanup.policy": true,
	"segment.bytes": true, "segment.ms": true, "compression.type": true,
	"min.insync.replicas": true, "max.message.bytes": true, "delete.retention.ms": true,
	"min.compaction.lag.ms": true, "max.compaction.lag.ms": true, "min.cleanable.dirty.ratio": true,
	"message.timestamp.type": true,
}

// topicConfigs returns the carried configs topic sets itself in a cluster.
func topicConfigs(ctx context.Context, adm *kadm.Client, topic string) (map[string]string, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return nil, err
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return nil, err
	}
	if rc.Err != nil {
		return nil, rc.Err
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		if carriedConfigs[c.Key] && c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
			out[c.Key] = *c.Value
		}
	}
	return out, nil
}

// syncTopics carries config changes and partition increases of the topics
// this process copies over to the target.
func (s *source) syncTopics(ctx context.Context) {
	topics := map[string]string{} // source topic -> target topic
	for _, p := range s.partitions() {
		topics[p.topic] = p.dstTopic
	}
	for topic, dst := range topics {
		if err := s.syncTopic(ctx, topic, dst); err != nil && ctx.Err() == nil {
			s.events.failures.WithLabelValues("target").Inc()
			s.log.Warn("carrying the topic's configs and partitions to the target; will retry", "topic", topic, "err", err)
		}
	}
}

func (s *source) syncTopic(ctx context.Context, topic, dst string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	want, err := topicConfigs(ctx, s.adm, topic)
	if err != nil {
		return fmt.Errorf("reading the source's configs: %w", err)
	}
	n, err := s.partitionCount(ctx, topic)
	if err != nil {
		return err
	}
	if _, err := s.tgt.ensureTopic(ctx, s.Name, dst, n, want); err != nil {
		return err
	}
	tadm := kadm.NewClient(s.tgt.client)
	have, err := topicConfigs(ctx, tadm, dst)
	if err != nil {
		return fmt.Errorf("reading the target's configs: %w", err)
	}
	if maps.Equal(want, have) {
		return nil
	}
	var alter []kadm.AlterConfig
	for k, v := range want {
		if have[k] != v {
			alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			alter = append(alter, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		}
	}
	resps, err := tadm.AlterTopicConfigs(ctx, alter, dst)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resps.On(dst, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		return fmt.Errorf("setting configs %v: %w", want, err)
	}
	s.log.Info("carried the source topic's configs to the target", "topic", topic, "target_topic", dst, "configs", want, "were", have)
	return nil
}
