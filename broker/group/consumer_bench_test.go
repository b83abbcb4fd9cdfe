package group

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"
)

// benchGroup joins members to one consumer group over topics×partitions and
// reconciles them until stable.
func benchGroup(b *testing.B, members, topics int, partitions int32) (*Coordinator, []ConsumerHeartbeatResult) {
	var ts []TopicInfo
	var names []string
	for i := 0; i < topics; i++ {
		ts = append(ts, TopicInfo{Name: fmt.Sprintf("t%04d", i), Partitions: partitions})
		names = append(names, ts[i].Name)
	}
	store, err := OpenDirStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	c := newCoordinator(Config{ConsumerMaxSize: members, Topics: func() []TopicInfo { return ts },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store)
	b.Cleanup(c.Close)
	res := make([]ConsumerHeartbeatResult, members)
	for i := range res {
		res[i] = c.ConsumerHeartbeat(ConsumerHeartbeat{Group: "g", MemberID: fmt.Sprintf("m%05d", i),
			SubscribedTopics: names, RebalanceTimeout: time.Minute, Owned: []TopicPartition{}})
	}
	for round := 0; round < 4; round++ {
		for i := range res {
			owned := res[i].Assignment
			r := c.ConsumerHeartbeat(ConsumerHeartbeat{Group: "g", MemberID: res[i].MemberID, MemberEpoch: res[i].MemberEpoch, Owned: owned})
			if r.Assignment == nil {
				r.Assignment = owned
			}
			res[i] = r
		}
	}
	return c, res
}

// BenchmarkConsumerHeartbeat is one steady-state heartbeat of a member of
// a 100-member group over 10 topics of 100 partitions.
func BenchmarkConsumerHeartbeat(b *testing.B) {
	c, res := benchGroup(b, 100, 10, 100)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := res[i%len(res)]
		if r := c.ConsumerHeartbeat(ConsumerHeartbeat{Group: "g", MemberID: m.MemberID, MemberEpoch: m.MemberEpoch}); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

// BenchmarkAssignUniform is one target computation for a group of 1,000
// members over 20 topics of 1,000 partitions (the broker's bounds), one
// member having just joined: the cost refreshTarget's throttle divides.
func BenchmarkAssignUniform(b *testing.B) {
	members := map[string]*cmember{}
	var topics []TopicInfo
	var names []string
	for i := 0; i < 20; i++ {
		topics = append(topics, TopicInfo{Name: fmt.Sprintf("t%04d", i), Partitions: 1000})
		names = append(names, topics[i].Name)
	}
	for i := 0; i < 999; i++ {
		members[fmt.Sprintf("m%05d", i)] = &cmember{topics: names}
	}
	prev := assign(AssignorUniform, members, topics, nil)
	members["new"] = &cmember{topics: names}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		assign(AssignorUniform, members, topics, prev)
	}
}
