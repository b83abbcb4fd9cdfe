package metrics

import (
	"encoding/binary"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
)

// headerOf is a record batch of size bytes claiming records records: all
// Produced reads of it.
func headerOf(size, records int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b[8:], uint32(size-12))
	binary.BigEndian.PutUint32(b[57:], uint32(records))
	return b
}

// Produced counts a partition's bytes and records under its topic, an
// error under its Kafka name, and nothing when the hooks are off.
func TestProducedCountsBytesRecordsAndErrors(t *testing.T) {
	records := append(headerOf(100, 3), headerOf(200, 5)...)
	for _, off := range []bool{false, true} {
		m := New(Config{Off: off})
		m.Produced("t", records, 0)
		m.Produced("t", records, kerr.NotLeaderForPartition.Code)
		want := map[bool][3]float64{false: {300, 8, 1}, true: {0, 0, 0}}[off]
		got := [3]float64{
			testutil.ToFloat64(m.bytesIn.WithLabelValues("t")),
			testutil.ToFloat64(m.messagesIn.WithLabelValues("t")),
			testutil.ToFloat64(m.partErrors.WithLabelValues("Produce", "NOT_LEADER_FOR_PARTITION")),
		}
		if got != want {
			t.Errorf("off=%v: bytes, records, errors %v, want %v", off, got, want)
		}
	}
}

func TestValidGranularity(t *testing.T) {
	for v, ok := range map[string]bool{"": true, PerPartition: true, PerTopic: true, "broker": false} {
		if err := ValidGranularity(v); (err == nil) != ok {
			t.Errorf("ValidGranularity(%q) = %v", v, err)
		}
	}
}
