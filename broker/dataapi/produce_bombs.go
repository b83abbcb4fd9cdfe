package dataapi

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
)

// Decompression work per Produce request. Each compressed batch may
// decompress to log.Config.MaxDecompressedBytes (64 MiB) during validation,
// but a request of many small bombs multiplied that: a hundred of them
// (212 KB) cost seven seconds of CPU. All batches of a request share one
// allowance instead: 64 times the request's record bytes, and at least
// four batches' worth (256 MiB by default), far above what real data
// compresses by; past it the request's remaining batches are refused as
// corrupt.
const (
	decompressRatioBound = 64
	decompressFloorBatch = 4
)

// decompressAllowance is the allowance of one Produce request.
func (h *Handlers) decompressAllowance(r *kmsg.ProduceRequest) *log.Allowance {
	var n int64
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			n += int64(len(rp.Records))
		}
	}
	return log.NewAllowance(max(decompressRatioBound*n, decompressFloorBatch*h.maxDecompressed))
}
