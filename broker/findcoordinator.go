package broker

// FindCoordinator.
//
// Each group has one coordinator, chosen among the live brokers by
// rendezvous hashing of the group name: every broker computes the same
// answer from the same cluster view; when a broker dies only its groups move
// (spread over the others, which read their committed offsets from the
// ZooKeeper offset registry), and when one joins it takes about 1/n of the
// groups and no other group moves. A standalone broker
// coordinates every group. A transactional id (key type 1) is
// coordinated by the leader of its __transaction_state partition
// (txncoordinator.go). Share groups (type 2) get INVALID_REQUEST with a
// message from v1, logged (refusals.go).

import (
	"encoding/binary"
	"hash/fnv"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/cluster"
)

func init() {
	register(10, 0, 6, func(b *Broker, c *conn, req *request) *pending {
		r := req.Request.(*kmsg.FindCoordinatorRequest)
		if refused := b.findCoordinatorRefused(req, r); refused != nil {
			return ready(encode(req, refused))
		}
		return ready(encode(req, b.findCoordinator(c.listener.Protocol, r)))
	})
}

// findCoordinatorRefused answers a request naming a group (transactional
// id) its client may not describe; nil when it may describe them all.
func (b *Broker) findCoordinatorRefused(req *request, r *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	typ, refused := kmsg.ACLResourceTypeGroup, groupRefused
	if r.CoordinatorType == 1 {
		typ, refused = kmsg.ACLResourceTypeTransactionalId, txnRefused
	}
	for _, k := range keys {
		if !b.may(req, kmsg.ACLOperationDescribe, typ, k) {
			resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
			resp.ErrorCode = refused
			for _, k := range keys {
				c := kmsg.NewFindCoordinatorResponseCoordinator()
				c.Key, c.ErrorCode, c.NodeID = k, refused, -1
				resp.Coordinators = append(resp.Coordinators, c)
			}
			resp.NodeID = -1
			return resp
		}
	}
	return nil
}

// findCoordinator answers a client of listener with the coordinator's
// endpoint of that listener, as Metadata does: a SASL client sent to a
// PLAINTEXT port beside it fails its handshake there.
func (b *Broker) findCoordinator(listener SecurityProtocol, req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		br, ok := b.coordinatorFor(key)
		if req.CoordinatorType == 1 {
			br, ok = b.txnCoordinatorFor(key)
		}
		switch {
		case req.CoordinatorType > 1:
			msg := "Tributary coordinates consumer groups only (key type 0); share groups are not supported"
			c.ErrorCode, c.ErrorMessage, c.NodeID = kerr.InvalidRequest.Code, &msg, -1
			b.refuse("share groups", "a client looked for a share group coordinator", "key", key)
		case !ok:
			msg := "no live broker to coordinate the group or transactional id; the cluster view may be catching up"
			c.ErrorCode, c.ErrorMessage, c.NodeID = kerr.CoordinatorNotAvailable.Code, &msg, -1
		default:
			host, port, ok := br.Endpoint(string(listener))
			if !ok {
				msg := "the group's coordinator, broker " + strconv.Itoa(int(br.ID)) + ", has no " + string(listener) + " listener; give every broker the same listeners"
				c.ErrorCode, c.ErrorMessage, c.NodeID = kerr.CoordinatorNotAvailable.Code, &msg, -1
				break
			}
			c.NodeID, c.Host, c.Port = br.ID, host, port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 && len(resp.Coordinators) == 1 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	return resp
}

// coordinatorFor picks a group's coordinator among the live brokers.
func (b *Broker) coordinatorFor(group string) (cluster.Broker, bool) {
	return pickCoordinator(group, b.meta.Brokers())
}

// pickCoordinator is rendezvous hashing: the broker whose hash with the
// group name is highest.
func pickCoordinator(group string, brokers []cluster.Broker) (cluster.Broker, bool) {
	var best cluster.Broker
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

// ownsGroup reports whether this broker is the group's coordinator.
func (b *Broker) ownsGroup(group string) bool {
	br, ok := b.coordinatorFor(group)
	return ok && br.ID == b.selfID
}
