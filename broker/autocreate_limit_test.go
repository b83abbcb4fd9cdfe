package broker_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// autoCreateStorm asks Metadata for n new topic names, ten a request, with
// auto-creation on, and counts the answers per error code.
func autoCreateStorm(t *testing.T, addr, prefix string, n int) map[int16]int {
	t.Helper()
	w := dial(t, addr)
	codes := map[int16]int{}
	for i := 0; i < n; i += 10 {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		req.AllowAutoTopicCreation = true
		for j := i; j < min(i+10, n); j++ {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(fmt.Sprintf("%s-%d", prefix, j))
			req.Topics = append(req.Topics, rt)
		}
		for _, st := range w.roundTrip(req).(*kmsg.MetadataResponse).Topics {
			codes[st.ErrorCode]++
		}
	}
	return codes
}

func topicCount(t *testing.T, adm *kadm.Client) int {
	t.Helper()
	topics, err := adm.ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(topics)
}

// An auto-create storm stops at --auto-create-max-topics (half of
// --max-topics), so an administrator's CreateTopics still succeeds, and
// runs no faster than --auto-create-rate. Before, the storm filled
// --max-topics and every CreateTopics was refused afterwards.
func TestAutoCreateStormLeavesRoomForCreateTopics(t *testing.T) {
	ctx := context.Background()
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.MaxTopics = 40
		c.AutoCreateRate = -1 // the cap alone here
	}))
	adm, _ := newAdmin(t, b.Addr)
	codes := autoCreateStorm(t, b.Addr, "storm", 100)
	if n := topicCount(t, adm); n != 20 {
		t.Errorf("the storm made %d topics (answers %v), want 20: half of --max-topics", n, codes)
	}
	resp, err := adm.CreateTopic(ctx, 1, 1, nil, "wanted")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("CreateTopics after the storm: %v %s", err, resp.ErrMessage)
	}

	limited := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.AutoCreateRate = 2 }))
	codes = autoCreateStorm(t, limited.Addr, "fast", 100)
	adm2, _ := newAdmin(t, limited.Addr)
	// Ten seconds' worth of burst, plus what the storm's duration earns.
	if n := topicCount(t, adm2); n < 20 || n > 30 {
		t.Errorf("a storm of 100 names at --auto-create-rate 2 made %d topics, want about 20 (the burst)", n)
	}
	if codes[kerr.ThrottlingQuotaExceeded.Code] < 70 {
		t.Errorf("answers %v: want the rest THROTTLING_QUOTA_EXCEEDED", codes)
	}
}
