package broker_test

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A batch-1 client waits for each answer before sending the next request,
// so nothing is ever queued ahead: the read loop writes every answer
// itself instead of waking the writer goroutine. Behind a response that is
// not ready yet, a ready one waits its turn in the queue.
func TestReadyResponsesWrittenInline(t *testing.T) {
	b := testenv.StartBroker(t)
	w := dial(t, b.Addr)
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "inline", 1, 1
	create.Topics = append(create.Topics, ct)
	w.roundTrip(create)

	stop := broker.CountInlineWrites()
	for i := range int32(5) {
		if r := produceResult(w.roundTrip(produceRequest(9, 1, "inline", 0, makeBatch(-1, -1, -1, "v")))); r.ErrorCode != 0 || r.BaseOffset != int64(i) {
			t.Fatalf("produce %d: error %d, base offset %d", i, r.ErrorCode, r.BaseOffset)
		}
	}
	if n := stop(); n != 5 {
		t.Errorf("%d of 5 acks=1 answers written by the read loop, want all", n)
	}

	stop = broker.CountInlineWrites()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("inline-test"))
	w.send(append(f.AppendRequest(nil, waitingFetch("inline", 5), 100),
		f.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 101)...))
	for want := int32(100); want <= 101; want++ {
		if got := int32(binary.BigEndian.Uint32(w.readFrame())); got != want {
			t.Fatalf("correlation id %d, want %d", got, want)
		}
	}
	if n := stop(); n != 0 {
		t.Errorf("%d answers written by the read loop while a fetch was waiting ahead of them, want 0", n)
	}
}

// waitingFetch asks for offset next of partition 0, the end of its log,
// with MinBytes 1, so it waits its MaxWaitMillis.
func waitingFetch(topic string, next int64) *kmsg.FetchRequest {
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 300, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes = next, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	return fetch
}

// Responses that are ready at once are written by the read loop when
// nothing is ahead of them; one that waits (a long-poll fetch) must still
// hold back every response behind it, and the ready ones after it must
// come out in request order.
func TestResponsesKeepRequestOrder(t *testing.T) {
	b := testenv.StartBroker(t)
	w := dial(t, b.Addr)
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "order", 1, 1
	create.Topics = append(create.Topics, ct)
	w.roundTrip(create)

	fetch := waitingFetch("order", 0)

	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("order-test"))
	ready := func(corr int32) []byte {
		if corr%2 == 0 {
			return f.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), corr)
		}
		m := kmsg.NewPtrMetadataRequest()
		m.SetVersion(7)
		return f.AppendRequest(nil, m, corr)
	}
	// ready, waiting, ready..., waiting, ready: all in one write.
	var frames []byte
	corr := int32(100)
	for round := range 2 {
		for range 3 + round {
			corr++
			frames = append(frames, ready(corr)...)
		}
		corr++
		frames = append(frames, f.AppendRequest(nil, fetch, corr)...)
	}
	corr++
	frames = append(frames, ready(corr)...)
	w.send(frames)
	for want := int32(101); want <= corr; want++ {
		if got := int32(binary.BigEndian.Uint32(w.readFrame())); got != want {
			t.Fatalf("response with correlation id %d, want %d: responses left request order", got, want)
		}
	}
	// The connection still serves requests one at a time afterwards.
	w.corr = corr
	w.roundTrip(kmsg.NewPtrApiVersionsRequest())
}
