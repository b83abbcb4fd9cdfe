package system_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestKillDuringProduce kills the broker process with SIGKILL in the middle
// of an acks=all produce stream, restarts it on the same data, and checks
// that every acknowledged record is there, in order, exactly once.
func TestKillDuringProduce(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	dataDir, addr := t.TempDir(), testenv.FreeAddr(t)
	proc := brokertest.StartStandalone(t, dataDir, addr)
	brokertest.CreateTopic(t, addr, "orders", 3, nil)

	prod := brokertest.NewClient(t, addr, kgo.DefaultProduceTopic("orders"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(5*time.Second))
	var mu sync.Mutex
	acked := map[int32][]int{}
	total := 0
	killed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			prod.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
				if err != nil {
					return
				}
				n, _ := strconv.Atoi(string(r.Value))
				mu.Lock()
				acked[r.Partition] = append(acked[r.Partition], n)
				total++
				if total == 30_000 {
					close(killed)
				}
				mu.Unlock()
			})
		}
	}()
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatal("30k records not acknowledged within a minute")
	}
	proc.Kill()
	cancel()
	prod.Close()
	mu.Lock()
	want := map[int32][]int{}
	for p, v := range acked {
		want[p] = append([]int(nil), v...)
	}
	mu.Unlock()

	brokertest.StartStandalone(t, dataDir, addr)
	cons := brokertest.NewClient(t, addr, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ends := endOffsets(t, addr, "orders")
	got := map[int32][]int{}
	testenv.Eventuallyf(t, 60*time.Second, func() (bool, string) {
		pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cons.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			n, _ := strconv.Atoi(string(r.Value))
			got[r.Partition] = append(got[r.Partition], n)
		})
		return reached(got, ends), fmt.Sprintf("consumed %v records, log ends at %v", lens(got), ends)
	})
	for p, values := range got {
		seen := map[int]bool{}
		for i, v := range values {
			if seen[v] {
				t.Fatalf("partition %d: record %d appears twice", p, v)
			}
			seen[v] = true
			if i > 0 && v <= values[i-1] {
				t.Fatalf("partition %d: record %d after %d: order lost", p, v, values[i-1])
			}
		}
		for _, v := range want[p] {
			if !seen[v] {
				t.Fatalf("partition %d: acknowledged record %d is missing after the crash", p, v)
			}
		}
	}
	t.Logf("acknowledged before the kill: %v; present after restart: %v", lens(want), lens(got))
}

func endOffsets(t *testing.T, addr, topic string) map[int32]int64 {
	t.Helper()
	adm, _ := brokertest.NewAdmin(t, addr)
	offs, err := adm.ListEndOffsets(context.Background(), topic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	ends := map[int32]int64{}
	offs.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	return ends
}

func reached(got map[int32][]int, ends map[int32]int64) bool {
	for p, end := range ends {
		if int64(len(got[p])) < end {
			return false
		}
	}
	return true
}

func lens(m map[int32][]int) map[int32]int {
	out := map[int32]int{}
	for p, v := range m {
		out[p] = len(v)
	}
	return out
}

// TestGracefulShutdown: SIGTERM lets the process finish, exit 0, and the
// data is all there after a restart.
func TestGracefulShutdown(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	dataDir, addr := t.TempDir(), testenv.FreeAddr(t)
	proc := brokertest.StartStandalone(t, dataDir, addr)
	prod := brokertest.NewClient(t, addr, kgo.DefaultProduceTopic("clean"), kgo.AllowAutoTopicCreation())
	var recs []*kgo.Record
	for i := range 1000 {
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	if err := proc.Stop(30 * time.Second); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	if out := proc.Output.String(); !strings.Contains(out, "broker stopped") {
		t.Fatalf("no shutdown line in the log:\n%s", out)
	}
	brokertest.StartStandalone(t, dataDir, addr)
	got := brokertest.ConsumeAll(t, addr, "clean", 1000)[0]
	for i, r := range got {
		if string(r.Value) != strconv.Itoa(i) {
			t.Fatalf("offset %d holds %q after restart", i, r.Value)
		}
	}
}
