package audit

import (
	"math/bits"
	"time"
)

// Latency histograms: how long after its header time a tier counted an
// event (for a producer, its acknowledgement; for the mirror, the target's
// acknowledgement). Bucket 0 holds latencies under 1 ms (and negative ones:
// clocks disagree); bucket i > 0 holds [2^(i-1), 2^i) ms. Power-of-two
// buckets keep a monitoring event small and add up across publishers; a
// percentile is reported as the top of its bucket, so it is never
// understated by more than half.
const latencyBuckets = 48 // 2^47 ms is over 4,000 years

// latencyBucket returns the bucket of latency d.
func latencyBucket(d time.Duration) int {
	ms := d.Milliseconds()
	if ms <= 0 {
		return 0
	}
	return min(bits.Len64(uint64(ms)), latencyBuckets-1)
}

// LatencyBucket returns the histogram bucket of latency d, for counters
// that keep their own histograms (the loader's, in its manifests).
func LatencyBucket(d time.Duration) int { return latencyBucket(d) }

// LatencyBuckets is the most buckets a histogram has.
const LatencyBuckets = latencyBuckets

// LatencyCount is the latency histogram of a topic's events in one window.
type LatencyCount struct {
	Topic   string
	Buckets []int64
}

// addBuckets adds b into *into, growing it as needed.
func addBuckets(into *[]int64, b []int64) {
	for len(*into) < len(b) {
		*into = append(*into, 0)
	}
	for i, n := range b {
		(*into)[i] += n
	}
}

// latencyPercentile returns the top of the bucket holding the q-th
// quantile (0 < q <= 1), or 0 for an empty histogram.
func latencyPercentile(b []int64, q float64) time.Duration {
	var total int64
	for _, n := range b {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := int64(q*float64(total) + 0.999999)
	var seen int64
	for i, n := range b {
		seen += n
		if seen >= rank {
			if i == 0 {
				return time.Millisecond
			}
			return time.Duration(int64(1)<<i) * time.Millisecond
		}
	}
	return time.Duration(int64(1)<<(len(b)-1)) * time.Millisecond
}
