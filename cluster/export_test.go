package cluster

// WatchReads and ControllerMultis expose zkmany.go's counters to the
// tests of package cluster_test.
func WatchReads() int64       { return watchReads.Load() }
func ControllerMultis() int64 { return controllerMultis.Load() }
