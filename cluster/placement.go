package cluster

// Where groups are coordinated. Each group has one coordinator, chosen
// among the live brokers by rendezvous hashing of the group name: every
// broker computes the same answer from the same cluster view; when a broker
// dies only its groups move (spread over the others, which read their
// committed offsets from the ZooKeeper offset registry), and when one joins
// it takes about 1/n of the groups and no other group moves. A standalone
// broker coordinates every group. (A transactional id is coordinated by the
// leader of its __transaction_state partition: broker/txnbackend.)

import (
	"encoding/binary"
	"hash/fnv"
)

// GroupCoordinator picks a group's coordinator among brokers: the broker
// whose hash with the group name is highest. It reports false when brokers
// is empty.
func GroupCoordinator(group string, brokers []Broker) (Broker, bool) {
	var best Broker
	var bestScore uint64
	found := false
	for _, br := range brokers {
		h := fnv.New64a()
		binary.Write(h, binary.BigEndian, br.ID)
		h.Write([]byte(group))
		score := mix64(h.Sum64())
		if !found || score > bestScore || score == bestScore && br.ID < best.ID {
			best, bestScore, found = br, score, true
		}
	}
	return best, found
}

// mix64 is the splitmix64 finalizer: FNV alone leaves the high bits, which
// decide the comparison, poorly mixed for inputs that differ at the end.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
