package main

// topics reassign --throttle and --verify: a reassignment's copying held
// to a rate, as Kafka's reassignment tool does it, so that moving a
// partition does not take the disks and the network from producers and
// consumers (the brokers apply it: broker/replication/throttle.go).
//
// --throttle sets leader.replication.throttled.rate and
// follower.replication.throttled.rate on every broker the move involves
// (dynamic broker configs), and names the partition's current replicas in
// the topic's leader.replication.throttled.replicas (they are read from)
// and the added ones in follower.replication.throttled.replicas (they
// copy). The throttle outlives the command; --verify removes it once the
// move is done: the partition's entries from the topic's lists at once,
// the broker rates when no reassignment is left in the cluster (another
// move may still count on them).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/cluster"
)

// reassignmentsUnderWay lists every move in the cluster. kadm's
// ListPartitionReassignments sends nothing for an empty set and reports
// none, so the request (null topics: all of them) is made here.
func reassignmentsUnderWay(ctx context.Context, cl *kgo.Client) ([]kmsg.ListPartitionReassignmentsResponseTopicPartition, []string, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 15000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = ": " + *resp.ErrorMessage
		}
		return nil, nil, fmt.Errorf("listing reassignments: %w%s", err, msg)
	}
	var parts []kmsg.ListPartitionReassignmentsResponseTopicPartition
	var topics []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, p)
			topics = append(topics, t.Topic)
		}
	}
	return parts, topics, nil
}

// throttleMove sets the throttle of moving topic-p from its current
// replicas to target at rate bytes a second.
func throttleMove(ctx context.Context, adm *kadm.Client, topic string, p int32, target []int32, rate int64) error {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return err
	}
	pd, ok := md.Topics[topic].Partitions[p]
	if !ok || md.Topics[topic].Err != nil {
		return fmt.Errorf("%s-%d: no such partition (%v)", topic, p, md.Topics[topic].Err)
	}
	current := pd.Replicas
	var leaders, followers []string
	for _, id := range current {
		leaders = append(leaders, fmt.Sprintf("%d:%d", p, id))
	}
	for _, id := range target {
		if !slices.Contains(current, id) {
			followers = append(followers, fmt.Sprintf("%d:%d", p, id))
		}
	}
	lists, err := throttledLists(ctx, adm, topic)
	if err != nil {
		return err
	}
	var alter []kadm.AlterConfig
	for _, c := range []struct {
		key   string
		items []string
	}{{cluster.LeaderThrottledReplicas, leaders}, {cluster.FollowerThrottledReplicas, followers}} {
		if lists[c.key] == "*" || len(c.items) == 0 {
			continue // every replica is throttled already, or none to add
		}
		v := strings.Join(c.items, ",")
		alter = append(alter, kadm.AlterConfig{Op: kadm.AppendConfig, Name: c.key, Value: &v})
	}
	if err := alterTopicConfigs(ctx, adm, topic, alter); err != nil {
		return err
	}
	brokers := slices.Compact(slices.Sorted(slices.Values(slices.Concat(current, target))))
	r := strconv.FormatInt(rate, 10)
	return alterBrokers(ctx, adm, brokers, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: cluster.LeaderThrottledRate, Value: &r},
		{Op: kadm.SetConfig, Name: cluster.FollowerThrottledRate, Value: &r},
	})
}

// verifyMove reports whether topic-p is still moving; once it is not, it
// removes the partition's throttled replicas and, when nothing moves in
// the cluster any more, every broker's throttle rates.
func verifyMove(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string, p int32) error {
	moving, topics, err := reassignmentsUnderWay(ctx, cl)
	if err != nil {
		return err
	}
	for i, m := range moving {
		if topics[i] == topic && m.Partition == p {
			return fmt.Errorf("%s-%d: still moving (replicas %v, adding %v, removing %v); the throttle stays: run --verify again once it is done",
				topic, p, m.Replicas, m.AddingReplicas, m.RemovingReplicas)
		}
	}
	lists, err := throttledLists(ctx, adm, topic)
	if err != nil {
		return err
	}
	var alter []kadm.AlterConfig
	for _, key := range []string{cluster.LeaderThrottledReplicas, cluster.FollowerThrottledReplicas} {
		cur := lists[key]
		if cur == "" || cur == "*" {
			continue // nothing of ours, or set by hand for every replica
		}
		var keep []string
		for _, e := range strings.Split(cur, ",") {
			if ps, _, _ := strings.Cut(strings.TrimSpace(e), ":"); ps != strconv.Itoa(int(p)) {
				keep = append(keep, strings.TrimSpace(e))
			}
		}
		if len(keep) == 0 {
			alter = append(alter, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key})
		} else if v := strings.Join(keep, ","); v != cur {
			alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: &v})
		}
	}
	if err := alterTopicConfigs(ctx, adm, topic, alter); err != nil {
		return err
	}
	fmt.Printf("%s-%d: reassignment complete; its throttled replicas removed\n", topic, p)
	if len(moving) > 0 {
		fmt.Printf("broker throttle rates kept: %d other partitions are still moving\n", len(moving))
		return nil
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	var brokers []int32
	for _, b := range md.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	if err := alterBrokers(ctx, adm, brokers, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: cluster.LeaderThrottledRate},
		{Op: kadm.DeleteConfig, Name: cluster.FollowerThrottledRate},
	}); err != nil {
		return err
	}
	fmt.Printf("broker throttle rates removed from brokers %v\n", brokers)
	return nil
}

// throttledLists reads the topic's throttled replicas lists as set on it.
func throttledLists(ctx context.Context, adm *kadm.Client, topic string) (map[string]string, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return nil, err
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return nil, fmt.Errorf("topic %s: describing its configs: %w", topic, err)
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		if (c.Key == cluster.LeaderThrottledReplicas || c.Key == cluster.FollowerThrottledReplicas) && c.Value != nil &&
			c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			out[c.Key] = strings.TrimSpace(*c.Value)
		}
	}
	return out, nil
}

func alterTopicConfigs(ctx context.Context, adm *kadm.Client, topic string, alter []kadm.AlterConfig) error {
	if len(alter) == 0 {
		return nil
	}
	rs, err := adm.AlterTopicConfigs(ctx, alter, topic)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("topic %s: setting its throttled replicas: %v: %s", topic, r.Err, r.ErrMessage)
		}
	}
	return nil
}

func alterBrokers(ctx context.Context, adm *kadm.Client, brokers []int32, alter []kadm.AlterConfig) error {
	rs, err := adm.AlterBrokerConfigs(ctx, alter, brokers...)
	if err != nil {
		return err
	}
	var failed error
	for _, r := range rs {
		if r.Err != nil {
			failed = errors.Join(failed, fmt.Errorf("broker %s: throttle rates: %v: %s", r.Name, r.Err, r.ErrMessage))
		}
	}
	return failed
}
