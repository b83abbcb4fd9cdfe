package replication

import "sync"

// Counters are what the fetchers of a broker have done, for tests and
// diagnostics.
type Counters struct {
	// Dials and Renewals are the connections made to leaders and the
	// re-authentications on them (KIP-368).
	Dials, Renewals int64
	// EpochRequests are the OffsetForLeaderEpoch requests sent.
	EpochRequests int64
	// ThrottledFetches are the partition fetches the replication
	// throttles held back, as leader or as follower.
	ThrottledFetches int64
}

// Counters reads the counters.
func (rs *Manager) Counters() Counters {
	return Counters{
		Dials: rs.dials.Load(), Renewals: rs.renewals.Load(),
		EpochRequests: rs.epochRequests.Load(), ThrottledFetches: rs.throttledFetches.Load(),
	}
}

// Pause stops the fetchers after their round in flight; resume
// (idempotent) starts them again. Tests use it to hold replication back.
func (rs *Manager) Pause() (resume func()) {
	rs.gate.Lock()
	return sync.OnceFunc(rs.gate.Unlock)
}

// BeforeStrayCheck runs fn, until restore is called, before any broker of
// the process reads from ZooKeeper the assignment of a partition it is
// about to delete as no longer its replica (stray.go): tests make that
// read fail there.
func BeforeStrayCheck(fn func(topic string, p int32)) (restore func()) {
	testHookBeforeStrayCheck.Store(&fn)
	return func() { testHookBeforeStrayCheck.Store(nil) }
}
