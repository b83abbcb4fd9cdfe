package txn

import "time"

// LoadStats is what reading state partitions has cost this coordinator
// since it started (Kafka's partition-load-time): a state partition is read
// whole when this broker first serves one of its ids in a leader epoch, and
// the requests of its ids wait meanwhile, so a growing time is a state
// topic whose compaction lags or a coordinator that keeps failing over.
type LoadStats struct {
	Loads   int64         // state partitions read
	Records int64         // records read in them
	Time    time.Duration // spent reading them
}

// Loads returns the state partitions read so far and their cost.
func (c *Coordinator) Loads() LoadStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}

// IDs is the number of transactional ids the coordinator holds in memory.
func (c *Coordinator) IDs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.txns)
}
