// Package log is Tributary's storage engine: one partition is one Log, a
// directory of append-only segment files holding Kafka RecordBatch v2 bytes
// exactly as producers sent them (only the 8-byte base offset is written by
// the broker), so bytes on disk equal bytes on the wire.
//
// What a caller may rely on:
//   - Append validates a batch completely before writing any byte of it, the
//     way Kafka's log validator does: the frame (length, magic 2, CRC32C,
//     record count against the last offset delta) and then every record in
//     it (lengths that use the batch's bytes exactly, offset deltas 0..n-1,
//     as many records as the count says, key, value and header lengths). A
//     compressed batch (gzip, snappy raw or xerial-framed, lz4 frame, zstd)
//     is decompressed for this through a fixed window, to at most
//     Config.MaxDecompressedBytes, so a decompression bomb costs bounded
//     memory and CPU. Append never re-encodes: what is stored is what the
//     caller passed. A rejected batch leaves no trace.
//   - AppendBatchesIn, for a topic that stores one codec (compression.type),
//     validates each batch as it was sent and then writes it re-encoded with
//     that codec (Recompress), keeping every header field but length, CRC
//     and codec, so offsets, timestamps and idempotent producers' sequences
//     mean the same; a damaged batch is refused, never given a fresh CRC
//     (recompress.go).
//   - AppendBatches validates every batch of a call, idempotent producer
//     sequences included, before writing any: a produce request is refused
//     whole or written whole (barring an I/O failure part way, after which
//     the batches already written stay and are remembered for deduplication).
//   - Offsets are dense logical offsets; a batch with N records takes N offsets.
//   - Readers see only flushed data: HighWatermark is the offset after the last
//     batch that has been fsynced. A crash never takes back an offset below the
//     high watermark, so a consumer may store offsets safely.
//   - Memory does not grow with the size of the log: the Log holds the sorted
//     base offsets of its segments and each segment's sparse index (an entry
//     every ~4 KiB of batches), never message bytes.
//   - An idempotent producer's retry of any of its last five batches is
//     answered with the original offsets and writes nothing, also across a
//     restart or crash, until the producer id expires (ProducerIDExpiry) or
//     is evicted as the least recently active past MaxProducerIDs.
//   - After an unclean shutdown, Open scans the segments written since the last
//     recovery checkpoint, cuts a torn or corrupt tail, rebuilds the index and
//     reports what it cut (RecoveryReport).
//   - A damaged batch with valid data after it costs that batch only: recovery
//     (and the scrubber, see Config.ScrubInterval) resynchronises at the next
//     valid batch, moves the damaged bytes to NNN.log.quarantine-<byte>,
//     rewrites the segment without them in one atomic rename and reports the
//     lost offset range. Offsets are never reassigned: the log has a gap there,
//     recorded in NNN.gaps, which Read skips. Every read does the same with
//     damage it meets: each stretch of a segment is CRC-checked the first
//     time this process serves it (appended and recovered bytes count as
//     checked), so bit rot in an old segment costs that batch only, by
//     default (readcheck.go). Config.BeforeLoss runs before any such loss is
//     made durable (a replicated partition fetches it again, repairmarker.go).
//   - A log whose CleanupPolicy compacts keeps, once cleaned, the last record
//     of every key and drops tombstones DeleteRetention after they were
//     written (clean.go); it refuses records without a key. Cleaning rewrites
//     sealed segments only, never the active one nor data younger than
//     MinCompactionLag, keeps every surviving record's offset (the removed
//     ones leave gaps, recorded in NNN.gaps), and swaps the rewritten
//     segments in as one set: after a crash at any point the log is the old
//     one or the cleaned one (swap.go). A Cleaner bounds the memory and
//     threads all the logs of a broker clean with.
//   - Verify checks a data directory offline without changing it.
//   - For replication (replica.go, epochs.go, truncate.go): AppendReplica
//     keeps the leader's offsets and bytes; a leader's appends carry its
//     leader epoch (AssignLeaderEpoch) and every log remembers where each
//     epoch starts (EndOffsetForEpoch), truncated with the log; TruncateTo
//     cuts whole batches from the end, is durable when it returns, and a
//     crash during it leaves the log cut or whole, never holding records of
//     an epoch its cache forgot.
//
// Every file operation goes through Config.FS, so that crash tests can run
// the log on a file system that keeps only what was fsynced and cut the
// power at each sync boundary (crash_test.go).
//
// The package knows nothing about sockets: Read returns a Slice naming a file
// and a byte range, and the broker decides how to move those bytes.
//
// On disk a partition directory holds, for each segment, NNN.log (the
// batches; NNN is the segment's base offset as %020d) and NNN.index (the
// sparse index, see index.go); recovery-checkpoint (the offset below which
// everything was fsynced, rewritten atomically at most every few seconds and
// at Close); NNN.producers (the idempotent producers' state as of offset
// NNN, written at each roll and at Close, see producer_snapshot.go);
// .clean-shutdown, present only between a clean Close and the next Open;
// after a repair, NNN.gaps (the offsets the segment lost) and
// NNN.log.quarantine-<byte> (the damaged bytes, for an operator); and for a
// compacted log, cleaner-checkpoint (where the uncleaned part starts),
// NNN.gaps also for the offsets compaction removed, and, only while a
// cleaning swaps segments in, NNN.log.cleaned, NNN.gaps.cleaned and the
// cleaning-swap marker; for a replicated partition, leader-epoch-checkpoint
// (the first offset of each leader epoch, replaced atomically on change)
// and, after damage was found and until the replica has cut its log back
// to fetch it again from its leader, repair-from (repairmarker.go).
package log

import (
	"errors"
	"os"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// Config holds the per-partition storage settings. Zero values take the
// defaults documented on each field (see Config.WithDefaults).
type Config struct {
	// SegmentBytes rolls the active segment once it reaches this size
	// (segment.bytes). Default 1 GiB.
	SegmentBytes int64
	// SegmentAge rolls the active segment once its first batch is this old
	// (segment.ms). Default 7 days.
	SegmentAge time.Duration
	// IntervalFlush restores the paper's batched flush: fsync only once
	// FlushMessages messages are unflushed or FlushInterval has passed
	// since data first went unflushed. Off by default: a partition with
	// unflushed data is fsynced as soon as its previous fsync finishes
	// (continuous group commit), so consumers, who see only flushed data,
	// see a record one fsync after it arrives, and under load each fsync
	// covers everything appended during the one before. A partition taking
	// 100,000 messages a second or more waits a short gap between flushes
	// (see busyFlushGap in flush.go): back-to-back fsyncs of a busy file
	// made its appends cost far more CPU.
	IntervalFlush bool
	// FlushMessages fsyncs once this many messages are unflushed
	// (flush.messages). With continuous flushing it is an upper bound that
	// is never reached in practice. Default 10000.
	FlushMessages int64
	// FlushInterval fsyncs unflushed data at least this often
	// (flush.ms). With continuous flushing it is an upper bound that is
	// never reached in practice. Default 200ms.
	FlushInterval time.Duration
	// RetentionAge deletes whole segments whose newest batch is older than
	// this (retention.ms). Default 7 days; negative keeps forever.
	RetentionAge time.Duration
	// RetentionBytes deletes whole segments from the front while the log is
	// larger than this (retention.bytes). Default -1: no size limit.
	RetentionBytes int64
	// IndexIntervalBytes is the spacing of sparse index entries. Default 4096.
	IndexIntervalBytes int64
	// Clock returns the current time; tests replace it. Default time.Now.
	Clock func() time.Time
	// OnFlush, if set, is told of every flush that fsynced something (for
	// metrics); it runs under the log's lock, so it must only record.
	OnFlush func(Flush)
	// RetentionCheckInterval is how often the log applies retention by
	// itself (log.retention.check.interval.ms). Default 5 minutes.
	RetentionCheckInterval time.Duration
	// ProducerIDExpiry forgets an idempotent producer's sequence state once
	// it has not appended for this long (producer.id.expiration.ms); its
	// next batch is then accepted with any sequence. Default 24 hours.
	ProducerIDExpiry time.Duration
	// MaxProducerIDs bounds the idempotent producers a partition tracks;
	// past it the least recently active one is forgotten, as if it had
	// expired. Any client may send made-up producer ids, so without a bound
	// they would take unbounded memory. Default 20000 (a few MB).
	MaxProducerIDs int
	// MaxDecompressedBytes caps what the records of one compressed batch
	// may decompress to; a batch expanding further is refused as corrupt.
	// Default 64 MiB: far above what a producer's 1 MiB batch of ordinary
	// data expands to, low enough that a bomb is cut off in milliseconds.
	MaxDecompressedBytes int64
	// DecompressMemory, when set, bounds the memory of the records being
	// decompressed for re-encoding across every log sharing it
	// (recordbatch/budget.go). Nil: each batch is bounded alone.
	DecompressMemory *MemoryBudget
	// ScrubInterval re-verifies the CRCs of sealed segments this often and
	// repairs damage found (see Log.Scrub). Default 0: off.
	ScrubInterval time.Duration
	// ScrubRate caps the scrubber's reads in bytes a second when no
	// ScrubPace is given. Default DefaultScrubRate.
	ScrubRate int64
	// ScrubPace, when set, paces the scrubbers of every log sharing it to
	// its one rate (scrub_pace.go); the broker shares one among its logs.
	ScrubPace *ScrubPace
	// FS is the file system the log lives on. Default OSFS; tests give a
	// file system that simulates power loss.
	FS FS
	// BeforeLoss, if set, is called by recovery, the scrubber and the
	// read check (readcheck.go) with the first offset of damage they are
	// about to quarantine, before any of it is made durable; an error
	// stops the quarantine (recovery fails, the scrubber logs it, the
	// read fails). A replicated partition records there where to fetch
	// again from its leader (RecordRepairFrom). It may be called during
	// Open and with the log's repair locks held: it must not call the log.
	BeforeLoss func(firstLost int64) error
	// OnLost, if set, is told of every range of offsets quarantined (for
	// metrics); it must only record.
	OnLost func(LostRange)

	// CleanupPolicy says whether old data goes by retention (delete, the
	// default), by compaction (compact: only the last record of each key
	// is kept, see clean.go) or both (compact,delete).
	CleanupPolicy CleanupPolicy
	// MinCleanableDirtyRatio: a compacted log is cleaned once the bytes
	// written since its last cleaning are at least this share of its
	// cleanable bytes (min.cleanable.dirty.ratio). Default 0.5.
	MinCleanableDirtyRatio float64
	// MinCompactionLag keeps records younger than this out of cleaning
	// (min.compaction.lag.ms), whole segments at a time. Default 0.
	MinCompactionLag time.Duration
	// MaxCompactionLag cleans a log whatever its dirty ratio once its
	// oldest uncleaned segment is this old (max.compaction.lag.ms).
	// Default: never.
	MaxCompactionLag time.Duration
	// DeleteRetention is how long a tombstone (a keyed record with a null
	// value) stays readable before cleaning removes it, so that consumers
	// have time to see the delete (delete.retention.ms). Default 1 day.
	DeleteRetention time.Duration
	// Compression is the topic's compression.type. The log applies it
	// where it writes batches of its own: the batches compaction rebuilds
	// (clean.go). Produce applies it on append (AppendBatchesIn). Default
	// CompressionProducer: each batch keeps its producer's codec.
	Compression Compression

	// Cleaner sizes the broker's log cleaner; only the Config the broker
	// opens partitions from (not a topic's) is read for it.
	Cleaner CleanerConfig
}

// CleanupPolicy is a topic's cleanup.policy.
type CleanupPolicy uint8

const (
	PolicyDelete        CleanupPolicy = iota // retention only
	PolicyCompact                            // compaction only: retention deletes nothing
	PolicyCompactDelete                      // compaction, and retention as configured
)

func (p CleanupPolicy) compacts() bool { return p != PolicyDelete }
func (p CleanupPolicy) deletes() bool  { return p != PolicyCompact }

// String is the policy as Kafka names it.
func (p CleanupPolicy) String() string {
	switch p {
	case PolicyCompact:
		return "compact"
	case PolicyCompactDelete:
		return "compact,delete"
	}
	return "delete"
}

// Slice is a byte range of one segment file holding whole record batches,
// ready to be sent with sendfile. The file stays open (even if retention
// deletes the segment meanwhile) until Release is called.
type Slice struct {
	File     *os.File // opened read-only; never Seek it, use Pos
	Pos      int64    // byte position of the first batch in File
	Size     int64    // bytes, a whole number of batches; 0 when nothing to read
	release  func()
	released bool
}

// Release lets the segment file be closed once no reader holds it.
func (s *Slice) Release() {
	if s == nil || s.released || s.release == nil {
		return
	}
	s.released = true
	s.release()
}

// AppendResult says where an appended batch landed.
type AppendResult struct {
	BaseOffset int64 // first offset of the batch
	LastOffset int64 // last offset of the batch
	// Duplicate is true when the batch repeated an idempotent producer's
	// sequence already in the log: nothing was written and the offsets are
	// those of the original batch.
	Duplicate bool
	// LogAppendTime is the broker time of the append (ms since epoch).
	LogAppendTime int64
}

// RecoveryReport says what Open had to do to the log after an unclean
// shutdown. Truncated bytes are lost data and are also logged.
type RecoveryReport struct {
	Clean           bool  // the previous shutdown was clean; nothing was scanned
	SegmentsScanned int   // segments scanned after the last recovery checkpoint
	TruncatedBytes  int64 // bytes cut from the tail of the log
	TruncatedAt     int64 // offset at which the log was cut (the new log end), or -1
	Reason          string
	IndexesRebuilt  int
	// Lost lists the damaged stretches in the middle of the log that
	// recovery moved to quarantine files: only their own offsets are gone.
	Lost []LostRange
}

// Errors returned by Append and Read. The broker maps each to a Kafka error
// code: they are the contract between storage and protocol.
var (
	// ErrCorruptBatch, ErrInvalidRecord and ErrUnsupportedMagic are the
	// format's own (recordbatch): what Validate refuses, Append refuses.
	ErrCorruptBatch     = recordbatch.ErrCorrupt
	ErrInvalidRecord    = recordbatch.ErrInvalidRecord
	ErrUnsupportedMagic = recordbatch.ErrUnsupportedMagic
	// ErrOutOfOrderSequence: an idempotent producer skipped a sequence number
	// (OUT_OF_ORDER_SEQUENCE_NUMBER).
	ErrOutOfOrderSequence = errors.New("idempotent producer sequence gap")
	// ErrInvalidProducerEpoch: a batch from an older epoch of a producer id
	// (INVALID_PRODUCER_EPOCH).
	ErrInvalidProducerEpoch = errors.New("stale producer epoch")
	// ErrOffsetOutOfRange: a read below the log start or above the log end
	// (OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("log closed")
)
