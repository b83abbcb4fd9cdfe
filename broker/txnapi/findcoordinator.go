package txnapi

// FindCoordinator (key 10), versions 0-6.
//
// Which broker coordinates a group (key type 0) or a transactional id
// (key type 1) is the broker's placement (Config.GroupCoordinator,
// Config.TxnCoordinator): rendezvous hashing of the group name over the
// live brokers, and the leader of the id's __transaction_state partition.
// The answer is the coordinator's endpoint on the client's own listener.
// Share groups (type 2) get INVALID_REQUEST with a message from v1, logged
// (Config.Refuse). Describe on every key named is needed.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/netserver"
)

func init() {
	add(10, 0, 6, func(h *Handlers) kafkaapi.Serve {
		return kafkaapi.Start(func(c kafkaapi.Conn, req *kafkaapi.Request, r *kmsg.FindCoordinatorRequest) *kafkaapi.Pending {
			if refused := h.findCoordinatorRefused(req, r); refused != nil {
				return kafkaapi.Ready(req, refused)
			}
			return kafkaapi.Ready(req, h.findCoordinator(c.Listener().Protocol, r))
		})
	})
}

// findCoordinatorRefused answers a request naming a group (transactional
// id) its client may not describe; nil when it may describe them all.
func (h *Handlers) findCoordinatorRefused(req *kafkaapi.Request, r *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	typ, refused := kmsg.ACLResourceTypeGroup, acl.GroupRefused
	if r.CoordinatorType == 1 {
		typ, refused = kmsg.ACLResourceTypeTransactionalId, acl.TxnRefused
	}
	for _, k := range keys {
		if !h.authz.May(req.Who, kmsg.ACLOperationDescribe, typ, k) {
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
func (h *Handlers) findCoordinator(listener netserver.SecurityProtocol, req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		br, ok := h.groupCoordinator(key)
		if req.CoordinatorType == 1 {
			br, ok = h.txnCoordinator(key)
		}
		switch {
		case req.CoordinatorType > 1:
			msg := "Tributary coordinates consumer groups only (key type 0); share groups are not supported"
			c.ErrorCode, c.ErrorMessage, c.NodeID = kerr.InvalidRequest.Code, &msg, -1
			h.refuse("share groups", "a client looked for a share group coordinator", "key", key)
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
