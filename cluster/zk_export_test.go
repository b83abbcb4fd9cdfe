package cluster

// WithDialer lets the external tests cut a member's connection to ZooKeeper
// to make its session expire, as a crash or a network partition would.
var WithDialer = withDialer
