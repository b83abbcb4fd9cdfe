package partition

// Parking. A partition log holds three descriptors on its active segment
// (data and index writers, the read descriptor) and some on sealed ones, so
// a broker whose descriptor limit is 20,000 kept about 3,300 logs open and
// closed the least recently used to open another. Closing costs a last
// flush, a recovery checkpoint, a producer snapshot and a clean-shutdown
// marker, and reopening reads them all back: one acks=all produce naming
// 10,000 partitions spent 16-29 s closing and reopening logs (Kafka 4.4,
// which keeps every log open: 5.7 s). A log pushed out for descriptors is
// now parked instead: log.ReleaseFiles closes its descriptors once it is
// clean (no fsync: everything written was fsynced) and the log stays open,
// its state in memory; its next append or read reopens the files it needs.
// Only past maxOpen open logs is one closed, for memory: each open log
// keeps two goroutines, its indexes and its producers.
//
// The descriptors of a parked log count in closingFDs until its release is
// done (a dirty log is released after the flush that covers it), so
// openers wait, as for closes, when releases fall behind.

// eviction lists the logs makeRoomLocked took: to park and to close.
type eviction struct{ park, close []*openLog }

// maxOpenLogs bounds the open logs, parked or not: as many as the process
// may hold descriptors, twice the budget, so memory grows with a limit the
// operator already sized. (0: no limit, with no budget.)
func maxOpenLogs(fdBudget int) int {
	if fdBudget <= 0 {
		return 0
	}
	return 2 * fdBudget
}

// parkLocked marks o parked: its descriptors leave the budget and wait in
// closingFDs for evict's release.
func (ps *Table) parkLocked(o *openLog) {
	o.parked = true
	ps.fds -= o.fds
	ps.closingFDs += o.fds
}

// evict parks and closes what makeRoomLocked took; call without mu.
func (ps *Table) evict(ev eviction) {
	ps.closeInBackground(ev.close)
	for _, o := range ev.park {
		n := o.fds
		o.l.ReleaseFiles(func() { ps.released(n) })
	}
}

// released counts n descriptors of a parked log as given back.
func (ps *Table) released(n int) {
	ps.mu.Lock()
	ps.closingFDs -= n
	close(ps.roomFreed)
	ps.roomFreed = make(chan struct{})
	ps.mu.Unlock()
}

// unpark puts a parked log that a request uses back in the budget, parking
// others to make room. Its files reopen as the log uses them.
func (ps *Table) unpark(o *openLog) {
	ps.waitForClosingRoom()
	ps.mu.Lock()
	if !o.parked || !o.inRing {
		ps.mu.Unlock()
		return
	}
	o.parked = false
	o.used.Store(true)
	ps.fds += o.fds
	ev := ps.makeRoomLocked(0, 0)
	ps.mu.Unlock()
	ps.evict(ev)
}
