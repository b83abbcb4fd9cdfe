package audit_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema"
)

// injection says what a copy from one cluster to another does wrong.
type injection struct {
	drop      func(topic string, partition int32, w time.Time, server string) bool
	duplicate func(topic string, w time.Time, server string) bool
}

// copyTopics copies every record of topics from src to dst, partition to
// partition, as a mirror would, applying inj. It returns, per (topic,
// window), how many records were dropped and duplicated.
func copyTopics(t *testing.T, src, dst string, reg *sr.Client, inj injection, topics ...string) (dropped, duplicated map[audit.TopicWindow]int64) {
	t.Helper()
	ctx := context.Background()
	hr, err := audit.NewHeaderReader(reg, audit.HeaderReaderConfig{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(audittest.Client(t, src))
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]map[int32]kgo.Offset{}
	left := 0
	ends.Each(func(o kadm.ListedOffset) {
		if parts[o.Topic] == nil {
			parts[o.Topic] = map[int32]kgo.Offset{}
		}
		parts[o.Topic][o.Partition] = kgo.NewOffset().AtStart()
		left += int(o.Offset)
	})
	in := audittest.Client(t, src, kgo.ConsumePartitions(parts))
	out := audittest.Client(t, dst, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	dropped, duplicated = map[audit.TopicWindow]int64{}, map[audit.TopicWindow]int64{}
	for left > 0 {
		fs := in.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			left--
			ts, server, err := hr.Read(ctx, r.Value)
			if err != nil {
				t.Fatalf("%s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
			}
			tw := audit.TopicWindow{Topic: r.Topic, Window: audit.WindowStart(ts, audit.DefaultWindow)}
			if inj.drop != nil && inj.drop(r.Topic, r.Partition, tw.Window, server) {
				dropped[tw]++
				return
			}
			copies := 1
			if inj.duplicate != nil && inj.duplicate(r.Topic, tw.Window, server) {
				copies = 2
				duplicated[tw]++
			}
			for range copies {
				if err := out.ProduceSync(ctx, &kgo.Record{Topic: r.Topic, Partition: r.Partition, Value: r.Value}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	return dropped, duplicated
}

func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	if _, err := kadm.NewClient(audittest.Client(t, addr)).CreateTopic(context.Background(), partitions, -1, nil, topic); err != nil {
		t.Fatalf("create %s on %s: %v", topic, addr, err)
	}
}

// A copy from the live cluster to the analysis cluster loses 7 pageviews
// of fe-2 in the second window, replays 30 of fe-1's pageviews of the
// third window, and skips partition 1 of clicks; 20 pageviews no audited
// producer sent are written to the analysis cluster in the first window.
// The report names each topic, window and tier with its exact count: the
// replayed range as 30 duplicates, the foreign events as 20 in excess; the
// live tier is complete, only the losses fall below the threshold, and
// both the duplicates and the excess are over a --max-excess of 0.
func TestInjectedLossAndDuplicatesAreNamed(t *testing.T) {
	live := audittest.Start(t)
	analysis := testenv.StartBroker(t)
	ws := pastWindows(3)
	for _, b := range []string{live.Broker.Addr, analysis.Addr} {
		createTopic(t, b, "pageview", 1)
		createTopic(t, b, "clicks", 2)
	}
	for _, name := range []string{"fe-1", "fe-2"} {
		s := newServer(t, live, name, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		for _, w := range ws {
			s.send(t, "pageview", w, 60)
			s.send(t, "clicks", w, 20)
		}
		if err := s.pub.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	dropCount, dupCount := 0, 0
	dropped, duplicated := copyTopics(t, live.Broker.Addr, analysis.Addr, live.Registry, injection{
		drop: func(topic string, p int32, w time.Time, server string) bool {
			if topic == "clicks" {
				return p == 1
			}
			if w.Equal(ws[1]) && server == "fe-2" && dropCount < 7 {
				dropCount++
				return true
			}
			return false
		},
		duplicate: func(topic string, w time.Time, server string) bool {
			if topic == "pageview" && w.Equal(ws[2]) && server == "fe-1" && dupCount < 30 {
				dupCount++
				return true
			}
			return false
		},
	}, "pageview", "clicks")
	produceForeign(t, analysis.Addr, live.Registry, "pageview", "fe-1", ws[0], 20)
	snapshot(t, live.Broker.Addr, live.Broker.Addr, live.Registry, audit.TierLive, ws, "pageview", "clicks")
	snapshot(t, analysis.Addr, live.Broker.Addr, live.Registry, audit.TierAnalysis, ws, "pageview", "clicks")

	r := reconcile(t, live.Broker.Addr, live.Registry, ws)
	for _, w := range ws {
		for _, topic := range []string{"pageview", "clicks"} {
			if got := row(t, r, topic, w, audit.TierLive); got.Status != audit.StatusOK || got.Produced != got.Received {
				t.Errorf("live tier, %s %s: %+v, want complete", topic, w.Format(time.TimeOnly), got)
			}
			tw := audit.TopicWindow{Topic: topic, Window: w}
			got := row(t, r, topic, w, audit.TierAnalysis)
			foreign := int64(0)
			if topic == "pageview" && w.Equal(ws[0]) {
				foreign = 20
			}
			if got.Missing != dropped[tw] || got.Duplicates != duplicated[tw] || got.Excess != foreign {
				t.Errorf("analysis tier, %s %s: missing %d, duplicates %d, excess %d; want %d, %d, %d",
					topic, w.Format(time.TimeOnly), got.Missing, got.Duplicates, got.Excess, dropped[tw], duplicated[tw], foreign)
			}
		}
	}
	if got := row(t, r, "pageview", ws[1], audit.TierAnalysis); got.Missing != 7 || got.Status != audit.StatusMissing {
		t.Errorf("pageview window 2: %+v, want 7 missing", got)
	}
	if got := row(t, r, "pageview", ws[2], audit.TierAnalysis); got.Duplicates != 30 || got.Excess != 0 || got.Completeness != 100 || got.Status != audit.StatusDuplicates {
		t.Errorf("pageview window 3: %+v, want exactly 30 duplicates, no excess, 100%% complete", got)
	}
	if got := row(t, r, "pageview", ws[0], audit.TierAnalysis); got.Excess != 20 || got.Duplicates != 0 || got.Completeness != 100 || got.Status != audit.StatusExcess {
		t.Errorf("pageview window 1: %+v, want exactly 20 in excess, no duplicates, 100%% complete", got)
	}
	var over []string
	for _, o := range r.Over(0) {
		over = append(over, o.Topic+" "+o.WindowStart.Format(time.TimeOnly)+" "+o.Tier)
	}
	if wantOver := []string{"pageview " + ws[0].Format(time.TimeOnly) + " analysis", "pageview " + ws[2].Format(time.TimeOnly) + " analysis"}; !slices.Equal(over, wantOver) {
		t.Errorf("over a max excess of 0: %v, want %v", over, wantOver)
	}
	if len(r.Over(30)) != 0 {
		t.Errorf("over a max excess of 30: %v, want none", r.Over(30))
	}
	var below []string
	for _, b := range r.Below(99.9) {
		below = append(below, b.Topic+" "+b.WindowStart.Format(time.TimeOnly)+" "+b.Tier)
	}
	want := []string{"clicks " + ws[0].Format(time.TimeOnly) + " analysis", "clicks " + ws[1].Format(time.TimeOnly) + " analysis",
		"clicks " + ws[2].Format(time.TimeOnly) + " analysis", "pageview " + ws[1].Format(time.TimeOnly) + " analysis"}
	if len(below) != len(want) {
		t.Fatalf("below 99.9%%: %v, want %v", below, want)
	}
	for i := range want {
		if below[i] != want[i] {
			t.Errorf("below 99.9%%: %v, want %v", below, want)
			break
		}
	}
	for _, w := range ws {
		if dropped[audit.TopicWindow{Topic: "clicks", Window: w}] == 0 {
			t.Errorf("partition 1 of clicks held nothing of window %s: the skipped partition tests nothing", w.Format(time.TimeOnly))
		}
	}
}

// produceForeign writes n pageviews of server with header times in window
// w straight to the broker at addr, counted by no producer: events that
// should not be there.
func produceForeign(t *testing.T, addr string, reg *sr.Client, topic, server string, w time.Time, n int) {
	t.Helper()
	text, err := os.ReadFile(pageviewSchema)
	if err != nil {
		t.Fatal(err)
	}
	ser, err := schema.NewSerializer(reg, schema.SerializerConfig{Schema: string(text), Service: "web", Server: server})
	if err != nil {
		t.Fatal(err)
	}
	cl := audittest.Client(t, addr)
	for i := range n {
		v, err := ser.Serialize(t.Context(), topic, map[string]any{
			"header": map[string]any{"time": w.Add(time.Duration(i) * time.Second)}, "memberId": int64(-i), "pageKey": "foreign",
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}
