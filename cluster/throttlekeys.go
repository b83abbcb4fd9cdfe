package cluster

// The replication throttle's config keys, Kafka's names, spelled once for
// the broker that enforces them and the tools that set them: the rates
// are dynamic broker configs, the throttled replicas ("partition:broker,..."
// or "*") topic configs.
const (
	LeaderThrottledRate       = "leader.replication.throttled.rate"
	FollowerThrottledRate     = "follower.replication.throttled.rate"
	LeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerThrottledReplicas = "follower.replication.throttled.replicas"
)
