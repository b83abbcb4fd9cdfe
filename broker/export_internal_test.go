package broker

import "time"

// EncodeBatchForTest exposes encodeBatch to the external tests.
func EncodeBatchForTest(recs []InternalRecord) []byte { return encodeBatch(time.Now(), recs) }
