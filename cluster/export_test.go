package cluster

// WatchReads and ControllerMultis expose zkmany.go's counters to the
// tests of package cluster_test.
func WatchReads() int64       { return watchReads.Load() }
func ControllerMultis() int64 { return controllerMultis.Load() }

// ISRMultis and ISRConflicts expose isrbatch.go's counters: the multis
// SetISRs sent, and those a concurrent write failed.
func ISRMultis() int64    { return isrMultis.Load() }
func ISRConflicts() int64 { return isrConflicts.Load() }
