package broker_test

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

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

	// A fetch of an empty partition waits its MaxWaitMillis.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 300, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "order"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)

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
