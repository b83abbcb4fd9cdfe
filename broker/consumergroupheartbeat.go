package broker

// ConsumerGroupHeartbeat (key 68, versions 0-1): the KIP-848 consumer
// group protocol, which Tributary does not serve yet. It is advertised
// all the same, and every heartbeat is answered UNSUPPORTED_VERSION with
// the reason: a client with group.protocol=consumer then stops at once
// with that message (Java and librdkafka both treat it as fatal), where a
// broker that did not advertise the API left librdkafka waiting silently
// for a coordinator forever.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(68, 0, 1, func(b *Broker, _ *conn, req *request) *pending {
		return ready(encode(req, b.consumerGroupHeartbeat(req, req.Request.(*kmsg.ConsumerGroupHeartbeatRequest))))
	})
}

const consumerProtocolRefusal = "Tributary serves the classic consumer group protocol only: set group.protocol=classic (the default) on this consumer"

func (b *Broker) consumerGroupHeartbeat(who *request, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	msg := consumerProtocolRefusal
	resp.ErrorCode, resp.ErrorMessage = kerr.UnsupportedVersion.Code, &msg
	b.refuse("consumer group protocol", "a consumer with group.protocol=consumer (KIP-848) sent a heartbeat",
		"group", req.Group, "client_id", who.clientID)
	return resp
}
