package log

import "runtime"

// fsyncSlots bounds how many partitions fsync at the same moment, across
// every Log of the process. With continuous group commit each partition
// with unflushed data fsyncs as soon as its previous fsync ends, so a
// broker with thousands of busy partitions would otherwise keep thousands of
// fsyncs (and the threads blocked in them) in flight at once. A device
// gains nothing past a modest queue depth: the partitions waiting for a
// slot keep appending, and their next fsync covers all of it.
var fsyncSlots = make(chan struct{}, max(16, 4*runtime.GOMAXPROCS(0)))

// acquireFsyncSlot waits for a slot and returns the function that frees it.
func acquireFsyncSlot() (release func()) {
	fsyncSlots <- struct{}{}
	return func() { <-fsyncSlots }
}
