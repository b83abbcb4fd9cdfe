package metrics

import (
	"encoding/binary"
	"testing"
	"time"
)

// BenchmarkMetricsHooks is the CPU time the event hooks add to one
// produce request of one partition (queue time, the append's bytes and
// records, the request's count and latency), with the hooks on and with
// Config.Off, where each hook is a check of one field. It
// isolates what BenchmarkProduceMetricsCost measures end to end under the
// machine's noise.
//
//	go test -run '^$' -bench BenchmarkMetricsHooks ./broker/metrics
func BenchmarkMetricsHooks(b *testing.B) {
	// A record batch header of 50 records: all produced reads of it.
	batch := make([]byte, 61+50*209)
	binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)-12))
	binary.BigEndian.PutUint32(batch[57:], 50)
	for _, off := range []bool{false, true} {
		name := "metrics=on"
		if off {
			name = "metrics=off"
		}
		b.Run(name, func(b *testing.B) {
			m := New(Config{Off: off})
			m.Produced("bench", batch, 0) // the topic's series exist, as after its first append
			start := time.Now()
			b.ReportAllocs()
			for range b.N {
				m.HandlerStarted(0, start)
				m.Produced("bench", batch, 0)
				m.ResponseDone(0, 0, start, true)
			}
		})
	}
}
