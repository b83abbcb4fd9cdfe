package broker

// SweepRetention runs one pass of the retention sweep now and returns the
// number of partitions it opened.
func (b *Broker) SweepRetention() int { return b.sweepOnce() }

// OpenPartitions is the number of open partition logs.
func (b *Broker) OpenPartitions() int {
	n, _ := b.logs.openCount()
	return n
}
