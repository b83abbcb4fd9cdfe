package txnapi

// WriteTxnMarkers.
//
// v0–1: a transaction coordinator (another broker of the cluster) asks
// this partition leader to end a producer's transaction with a commit or
// abort marker, and an operator's admin client (kafka-transactions abort,
// Admin.abortTransaction) aborts a hanging transaction, one whose
// coordinator no longer ends it. With an authorizer, ClusterAction on the
// cluster decides, as in Kafka. Without one, a marker from another live
// broker's address is a coordinator's; from anywhere else only aborts are
// admitted (what the admin API sends; every client is an administrator
// when nothing is authorized, as in Kafka) and each is logged, while a
// commit is refused: a client deciding that another producer's records
// become visible is never an operator's repair.
//
// Each marker is written with the leader's epoch and answered once
// replicated (acks=all); a marker of a producer epoch older than the
// partition's current one gets INVALID_PRODUCER_EPOCH, one from a
// coordinator epoch older than a marker already written for the producer
// TRANSACTION_COORDINATOR_FENCED, a partition this broker does not lead
// NOT_LEADER_OR_FOLLOWER, so the coordinator retries at the new leader.

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(27, 0, 1, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.writeTxnMarkers) })
}

func (h *Handlers) writeTxnMarkers(req *kafkaapi.Request, r *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	coordinator := h.authz.MayCluster(req.Who, kmsg.ACLOperationClusterAction) && (h.authz != nil || h.fromOtherBroker(req.Host))
	ctx, cancel := h.ctx()
	defer cancel()
	for _, m := range r.Markers {
		allowed := coordinator || h.authz == nil && !m.Committed
		if allowed && !coordinator {
			h.logger.Warn("aborting a transaction at a client's request (kafka-transactions abort)",
				"principal", req.Principal, "host", req.Host, "producer_id", m.ProducerID, "producer_epoch", m.ProducerEpoch)
		}
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			ct, ok := h.meta.Topic(t.Topic)
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				switch {
				case !allowed:
					rp.ErrorCode = acl.ClusterRefused
				case !ok:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					rp.ErrorCode = h.writeMarker(ctx, ct, p, m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}

// fromOtherBroker says whether host (the client's IP) is the address of
// another live broker of the cluster.
func (h *Handlers) fromOtherBroker(host string) bool {
	for _, br := range h.meta.Brokers() {
		if br.ID == h.self {
			continue
		}
		hosts := []string{br.Host}
		for _, ep := range br.Endpoints {
			hosts = append(hosts, ep.Host)
		}
		for _, h := range hosts {
			addrs, err := net.LookupHost(h)
			if err != nil {
				continue
			}
			for _, a := range addrs {
				if a == host {
					return true
				}
			}
		}
	}
	return false
}
