package compat_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Deleting a topic drops every group's committed offsets of it, in both
// offset stores, before DeleteTopics answers: a group that consumed 100
// records of a topic deleted and created again reads the new topic from
// its start, not from offset 100 (which silently skipped the new topic's
// first 100 records), and kafka-consumer-groups --describe no longer
// fails on a partition that does not exist. The deletion logs no error.
func TestDeletedTopicOffsetsForgotten(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, errs *testenv.SyncBuffer) string
		java  bool
	}{
		{"standalone", func(t *testing.T, errs *testenv.SyncBuffer) string {
			return brokertest.StartGroupBroker(t, testenv.WithConfig(func(c *broker.Config) {
				brokertest.FastGroups(c)
				c.Logger = errorRecorder(errs)
			})).Addr
		}, true},
		{"zookeeper", func(t *testing.T, errs *testenv.SyncBuffer) string {
			_, bs := testenv.StartCluster(t, 1, testenv.WithConfig(func(c *broker.Config) {
				brokertest.FastGroups(c)
				c.Logger = errorRecorder(errs)
			}))
			return bs[0].Addr
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := &testenv.SyncBuffer{}
			addr := tc.start(t, errs)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			brokertest.CreateTopic(t, addr, "gone", 1, nil)
			brokertest.CreateTopic(t, addr, "kept", 1, nil)
			brokertest.ProduceValues(t, addr, "gone", 0, 100)
			brokertest.ProduceValues(t, addr, "kept", 0, 10)
			adm, _ := brokertest.NewAdmin(t, addr)
			var offs kadm.Offsets
			offs.Add(kadm.Offset{Topic: "gone", Partition: 0, At: 100})
			offs.Add(kadm.Offset{Topic: "kept", Partition: 0, At: 10})
			if _, err := adm.CommitOffsets(ctx, "app", offs); err != nil {
				t.Fatal(err)
			}

			if tc.java {
				bs := []string{"--bootstrap-server", addr}
				res := testenv.RunKafkaTools(t,
					testenv.KafkaToolRun{Class: testenv.KafkaTopics, Args: append(bs, "--delete", "--topic", "gone")},
					testenv.KafkaToolRun{Class: testenv.KafkaConsumerGroups, Args: append(bs, "--describe", "--group", "app")},
				)
				for _, r := range res {
					if r.Exit != 0 {
						t.Fatalf("%v", r)
					}
				}
				if out := res[1].Stdout; strings.Contains(out, "gone") || !strings.Contains(out, "kept") {
					t.Fatalf("describe after the delete should list kept only:\n%v", res[1])
				}
			} else {
				resp, err := adm.DeleteTopics(ctx, "gone")
				if err != nil || resp.Error() != nil {
					t.Fatalf("deleting: %v %v", err, resp.Error())
				}
			}
			// Answered: the offsets are already gone.
			got := brokertest.Committed(t, addr, "app")
			if _, ok := got.Lookup("gone", 0); ok {
				t.Fatalf("committed offset of the deleted topic still stored: %+v", got)
			}
			if o, ok := got.Lookup("kept", 0); !ok || o.At != 10 {
				t.Fatalf("offset of the other topic: %+v, want 10", o)
			}

			brokertest.CreateTopic(t, addr, "gone", 1, nil)
			brokertest.ProduceValues(t, addr, "gone", 0, 150)
			cl := brokertest.NewClient(t, addr, kgo.ConsumerGroup("app"), kgo.ConsumeTopics("gone"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			var first int64 = -1
			n := 0
			for n < 150 {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("read %d of the re-created topic's 150 records (first offset %d)", n, first)
				}
				fs.EachRecord(func(r *kgo.Record) {
					if first < 0 {
						first = r.Offset
					}
					n++
				})
			}
			if first != 0 {
				t.Fatalf("the group resumed the re-created topic at offset %d, want 0", first)
			}
			if s := errs.String(); s != "" {
				t.Fatalf("errors logged:\n%s", s)
			}
		})
	}
}

// errorRecorder is a broker logger that keeps ERROR lines only.
func errorRecorder(w *testenv.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelError}))
}
