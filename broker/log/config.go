package log

import (
	"math"
	"time"
)

// Defaults applied by Config.WithDefaults.
const (
	DefaultSegmentBytes           = 1 << 30
	DefaultSegmentAge             = 7 * 24 * time.Hour
	DefaultFlushMessages          = 10000
	DefaultFlushInterval          = 200 * time.Millisecond
	DefaultRetentionAge           = 7 * 24 * time.Hour
	DefaultIndexIntervalBytes     = 4096
	DefaultRetentionCheckInterval = 5 * time.Minute
	DefaultProducerIDExpiry       = 24 * time.Hour
	DefaultMaxProducerIDs         = 20000
	DefaultMaxDecompressedBytes   = 64 << 20
	DefaultMinCleanableDirtyRatio = 0.5
	DefaultDeleteRetention        = 24 * time.Hour

	// MaxSegmentBytes caps SegmentBytes: index entries hold file positions
	// as uint32, and Kafka's segment.bytes is an int32.
	MaxSegmentBytes = 1<<31 - 1
)

// WithDefaults returns c with every zero (or out of range) field replaced
// by its default, and SegmentBytes capped at MaxSegmentBytes.
func (c Config) WithDefaults() Config {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	c.SegmentBytes = min(c.SegmentBytes, MaxSegmentBytes)
	if c.SegmentAge <= 0 {
		c.SegmentAge = DefaultSegmentAge
	}
	if c.FlushMessages <= 0 {
		c.FlushMessages = DefaultFlushMessages
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.RetentionAge == 0 {
		c.RetentionAge = DefaultRetentionAge
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = -1
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if c.FS == nil {
		c.FS = OSFS{}
	}
	if c.ScrubRate <= 0 {
		c.ScrubRate = DefaultScrubRate
	}
	if c.ProducerIDExpiry <= 0 {
		c.ProducerIDExpiry = DefaultProducerIDExpiry
	}
	if c.MaxProducerIDs <= 0 {
		c.MaxProducerIDs = DefaultMaxProducerIDs
	}
	if c.MaxDecompressedBytes <= 0 {
		c.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	if c.MinCleanableDirtyRatio <= 0 || c.MinCleanableDirtyRatio > 1 {
		c.MinCleanableDirtyRatio = DefaultMinCleanableDirtyRatio
	}
	if c.MinCompactionLag < 0 {
		c.MinCompactionLag = 0
	}
	if c.MaxCompactionLag <= 0 {
		c.MaxCompactionLag = math.MaxInt64
	}
	if c.DeleteRetention == 0 {
		c.DeleteRetention = DefaultDeleteRetention
	}
	c.Cleaner = c.Cleaner.withDefaults()
	return c
}
