package log

// DecompressRecords returns the records of a batch compressed with codec
// (the low three bits of its attributes), decompressed into a new slice of
// at most limit bytes. It is exported for Tributary's readers of fetched
// batches (the loader), so that they expand batches with the same bounded,
// pooled decoders the broker checks them with instead of a second set.
// Errors wrap ErrCorruptBatch.
func DecompressRecords(codec int, data []byte, limit int64) ([]byte, error) {
	return decompressAll(codec, data, limit)
}
