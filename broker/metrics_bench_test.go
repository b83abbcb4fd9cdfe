package broker_test

import (
	"bytes"
	"fmt"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// BenchmarkProduceMetricsCost is what the metrics' event hooks cost the
// produce path: BenchmarkProduceWire's client (pre-encoded acks=1 Produce
// requests on one connection, each response read before the next is
// sent) against a broker with the hooks on and one with
// Config.DisableMetrics, at batches of 1 and 50 records of 200 bytes.
// msgs/s and cpu-ns/msg (the whole process's CPU time, the client's
// included) of metrics=on over metrics=off is the cost. The machine's
// noise is larger than the difference, so compare the medians of several
// runs; the first of a pair tends to measure a few percent better, so
// also run with the pair's order swapped. BenchmarkMetricsHooks measures
// the hooks alone.
//
//	for i in 1 2 3 4 5 6; do go test -run '^$' -bench BenchmarkProduceMetricsCost -benchtime 2s ./broker/; done
func BenchmarkProduceMetricsCost(b *testing.B) {
	// Each pair of one batch size runs back to back, so that the
	// machine's load drifts as little as possible between them.
	for _, batch := range []int{1, 50} {
		for _, on := range []bool{true, false} {
			name := "metrics=off"
			if on {
				name = "metrics=on"
			}
			b.Run(fmt.Sprintf("%s/batch=%d", name, batch), func(b *testing.B) {
				br := testenv.StartBroker(b, testenv.WithConfig(func(c *broker.Config) { c.DisableMetrics = !on }))
				produceWire(b, br.Addr, batch)
			})
		}
	}
}

// produceWire creates the topic "wire" and times b.N produce requests of
// batch records each, reporting msgs/s and CPU per request and per
// message (the whole process's, client included), then checks that the
// request was really accepted.
func produceWire(b *testing.B, addr string, batch int) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "wire", 1, 1
	create.Topics = append(create.Topics, ct)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("metrics-cost"))
	if _, err := conn.Write(f.AppendRequest(nil, create, 0)); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	if _, err := discardFrame(conn, buf); err != nil {
		b.Fatal(err)
	}
	values := make([]string, batch)
	for i := range values {
		values[i] = string(bytes.Repeat([]byte("m"), benchValueSize))
	}
	records := makeBatch(-1, -1, -1, values...)
	req := f.AppendRequest(nil, produceRequestBench(records), 1)
	b.SetBytes(int64(batch * benchValueSize))
	cpu := cpuTime()
	b.ResetTimer()
	for range b.N {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := discardFrame(conn, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	msgs := float64(b.N * batch)
	b.ReportMetric(msgs/b.Elapsed().Seconds(), "msgs/s")
	spent := float64(cpuTime() - cpu)
	b.ReportMetric(spent/float64(b.N), "cpu-ns/op")
	b.ReportMetric(spent/msgs, "cpu-ns/msg")
	if err := checkProduce(conn, f, records); err != nil {
		b.Fatal(err)
	}
}
