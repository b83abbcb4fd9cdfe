package broker

// WriteTxnMarkers.
//
// v0–1: a transaction coordinator (another broker of the cluster) asks
// this partition leader to end a producer's transaction with a commit or
// abort marker. Only brokers may (ClusterAction on the cluster): a marker
// from a client would decide another producer's transaction. Each marker
// Without an authorizer, the sender must at least connect from the address
// of another live broker: a standalone broker, its own only coordinator,
// refuses every WriteTxnMarkers (so kafka-transactions abort is refused
// there too). Each marker is written with the leader's epoch and answered
// once replicated
// (acks=all); a marker of a producer epoch older than the partition's
// current one gets INVALID_PRODUCER_EPOCH, one from a coordinator epoch
// older than a marker already written for the producer
// TRANSACTION_COORDINATOR_FENCED, a partition this broker does not
// lead NOT_LEADER_OR_FOLLOWER, so the coordinator retries at the new
// leader.

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(27, 0, 1, async((*Broker).writeTxnMarkers))
}

func (b *Broker) writeTxnMarkers(req *request, r *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	allowed := b.mayCluster(req, kmsg.ACLOperationClusterAction) && (b.authz != nil || b.fromOtherBroker(req.host))
	ctx, cancel := b.txnCtx()
	defer cancel()
	for _, m := range r.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			ct, ok := b.meta.Topic(t.Topic)
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				switch {
				case !allowed:
					rp.ErrorCode = clusterRefused
				case !ok:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					rp.ErrorCode = b.writeMarker(ctx, ct, p, m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch)
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
func (b *Broker) fromOtherBroker(host string) bool {
	for _, br := range b.meta.Brokers() {
		if br.ID == b.selfID {
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
