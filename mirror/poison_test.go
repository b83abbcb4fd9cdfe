package mirror_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// incompressible returns n bytes no codec shrinks, so that a batch stays
// larger than a limit whatever the producer's compression.
func incompressible(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

// A record the target refuses (larger than the target topic's
// max.message.bytes) stops its partition only: the status and the metric
// say so, the other partition keeps flowing, and nothing after the poison
// record is copied out of order.
func TestMirrorPoisonRecordStopsItsPartitionOnly(t *testing.T) {
	needServices(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	createTopic(t, []string{src.Addr}, "events", 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	size := "4096"
	if _, err := kadm.NewClient(newClient(t, []string{dst.Addr})).CreateTopic(ctx, 2, 1, map[string]*string{"max.message.bytes": &size}, "events"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, []string{src.Addr}, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i, v := range [][]byte{[]byte("small"), incompressible(20000), []byte("after")} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Partition: 0, Value: v}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	m, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{src.Addr}}}, Target: []string{dst.Addr}})
	for range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Partition: 1, Value: []byte("ok")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventuallyf(t, time.Minute, func() (bool, string) {
		st := m.Status()
		if len(st.Sources) == 0 || len(st.Sources[0].Partitions) != 2 {
			return false, "waiting for the partitions"
		}
		p0, p1 := st.Sources[0].Partitions[0], st.Sources[0].Partitions[1]
		return strings.Contains(p0.Stopped, "events/0 offset 1") && p1.Safe == 20,
			fmt.Sprintf("partition 0 %+v", p0)
	})
	if err := stop(); err != nil {
		t.Fatalf("the mirror stopped with %v; a poison record must stop its partition only", err)
	}
	got := readTopic(t, []string{dst.Addr}, "events")
	if len(got[0]) != 1 || string(got[0][0].Value) != "small" || len(got[1]) != 20 {
		t.Fatalf("target holds %d records in partition 0 (want the one before the poison) and %d in partition 1 (want 20)", len(got[0]), len(got[1]))
	}
}
