package broker_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// DescribeTopicPartitions pages: at most ResponsePartitionLimit partitions
// an answer, the cursor naming where the next one starts, topics by name.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "paged-b", 2, nil)
	createTopic(t, b.Addr, "paged-a", 3, nil)
	cl := newClient(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var pages []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for range 5 {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = 2
		req.Cursor = cursor
		for _, n := range []string{"paged-b", "paged-a", "missing"} {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = n
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		var page []string
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				page = append(page, *rt.Topic+":err"+strconv.Itoa(int(rt.ErrorCode)))
			}
			for _, p := range rt.Partitions {
				if p.LeaderID != 0 || len(p.ISR) != 1 {
					t.Fatalf("%s-%d: leader %d, ISR %v", *rt.Topic, p.Partition, p.LeaderID, p.ISR)
				}
				page = append(page, *rt.Topic+"-"+strconv.Itoa(int(p.Partition)))
			}
		}
		pages = append(pages, strings.Join(page, " "))
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := []string{"missing:err3 paged-a-0 paged-a-1", "paged-a-2 paged-b-0", "paged-b-1"}
	if strings.Join(pages, " | ") != strings.Join(want, " | ") {
		t.Fatalf("pages %q, want %q", pages, want)
	}
}
