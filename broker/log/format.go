package log

import "github.com/tributary-io/tributary/internal/recordbatch"

// The RecordBatch format is recordbatch's; the log's API speaks of its
// codecs, record errors and decompression budget under the log's names, so
// that a caller of the storage engine needs no second import for them.
type (
	// Codec is a record batch's compression codec.
	Codec = recordbatch.Codec
	// RecordError is an ErrInvalidRecord naming the record at fault.
	RecordError = recordbatch.RecordError
	// MemoryBudget bounds the bytes held by decompressions across logs
	// (Config.DecompressMemory).
	MemoryBudget = recordbatch.MemoryBudget
)

// The codecs, as recordbatch defines them.
const (
	CodecNone   = recordbatch.CodecNone
	CodecGzip   = recordbatch.CodecGzip
	CodecSnappy = recordbatch.CodecSnappy
	CodecLZ4    = recordbatch.CodecLZ4
	CodecZstd   = recordbatch.CodecZstd
)

// NewMemoryBudget makes a budget of capacity bytes.
func NewMemoryBudget(capacity int64) *MemoryBudget { return recordbatch.NewMemoryBudget(capacity) }
