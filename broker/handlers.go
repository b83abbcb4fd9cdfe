package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

const apiVersionsKey = 18

// versions is a range of versions of one API that the broker really
// implements.
type versions struct{ min, max int16 }

// supported lists the APIs and versions advertised in ApiVersions. Versions
// that address topics by id only (Produce 13+, Fetch 13+) are left out:
// Tributary names topics, and clients fall back to the highest version both
// sides know. Produce starts at 0 on purpose: librdkafka (kcat) enables
// record-batch v2, compression and idempotence only when the ranges include
// old versions; a real v0-2 produce is refused with
// UNSUPPORTED_FOR_MESSAGE_FORMAT (see produce.go).
var supported = map[int16]versions{
	0:  {0, 12}, // Produce
	1:  {4, 12}, // Fetch
	2:  {1, 9},  // ListOffsets
	3:  {0, 12}, // Metadata
	8:  {0, 9},  // OffsetCommit (v10 names topics by id)
	9:  {0, 9},  // OffsetFetch (v10 names topics by id)
	10: {0, 6},  // FindCoordinator
	11: {0, 9},  // JoinGroup
	12: {0, 4},  // Heartbeat
	13: {0, 5},  // LeaveGroup
	14: {0, 5},  // SyncGroup
	15: {0, 6},  // DescribeGroups
	16: {0, 5},  // ListGroups
	17: {0, 1},  // SaslHandshake (v0 is refused, but librdkafka needs it listed; see sasl.go)
	18: {0, 4},  // ApiVersions
	19: {0, 7},  // CreateTopics
	20: {0, 6},  // DeleteTopics
	21: {0, 2},  // DeleteRecords
	22: {0, 4},  // InitProducerId
	29: {1, 3},  // DescribeAcls
	30: {1, 3},  // CreateAcls
	31: {1, 3},  // DeleteAcls
	32: {0, 4},  // DescribeConfigs
	33: {0, 2},  // AlterConfigs
	35: {0, 4},  // DescribeLogDirs
	36: {0, 2},  // SaslAuthenticate
	37: {0, 3},  // CreatePartitions
	42: {0, 2},  // DeleteGroups
	44: {0, 1},  // IncrementalAlterConfigs
	47: {0, 0},  // OffsetDelete
	48: {0, 1},  // DescribeClientQuotas
	49: {0, 1},  // AlterClientQuotas
	50: {0, 0},  // DescribeUserScramCredentials
	51: {0, 0},  // AlterUserScramCredentials
}

// handle starts serving one request and returns its pending response. It
// runs on the connection's read goroutine, so whatever must happen in
// request order (appends) happens here; waiting happens in later().
//
// On a SASL listener, a request other than the SASL exchange before
// authentication closes the connection (nil, as Kafka does): the client
// skipped the login, and answering would serve an unknown principal.
func (b *Broker) handle(c *conn, req *request) *pending {
	if !c.auth.authenticated && !preAuthAPI(req.Key()) {
		c.logger.Warn("closing connection: request before SASL authentication",
			"api", kmsg.NameForKey(req.Key()), "client_id", req.clientID, "listener", c.listener.Protocol)
		return nil
	}
	req.principal, req.host = c.auth.principal, c.ip
	if b.authz != nil {
		if p := b.authorize(req); p != nil {
			return p
		}
	}
	switch r := req.Request.(type) {
	case *kmsg.ApiVersionsRequest:
		return ready(encode(req, b.apiVersions(r)))
	case *kmsg.SASLHandshakeRequest:
		return ready(encode(req, b.saslHandshake(c, r)))
	case *kmsg.SASLAuthenticateRequest:
		return ready(b.saslAuthenticate(c, req, r))
	case *kmsg.MetadataRequest:
		return ready(encode(req, b.metadata(c.listener.Protocol, req, r)))
	case *kmsg.CreateTopicsRequest:
		return ready(encode(req, b.createTopics(r)))
	case *kmsg.DeleteTopicsRequest:
		return ready(encode(req, b.deleteTopics(req, r)))
	case *kmsg.InitProducerIDRequest:
		return ready(encode(req, b.initProducerID(r)))
	case *kmsg.DescribeConfigsRequest:
		return ready(encode(req, b.describeConfigs(r)))
	case *kmsg.ListOffsetsRequest:
		return ready(encode(req, b.listOffsets(r)))
	case *kmsg.ProduceRequest:
		return b.produce(req, r)
	case *kmsg.FetchRequest:
		return b.fetch(req, r)
	case *kmsg.FindCoordinatorRequest:
		return ready(encode(req, b.findCoordinator(r)))
	case *kmsg.JoinGroupRequest:
		return b.joinGroup(c, req, r)
	case *kmsg.SyncGroupRequest:
		return b.syncGroup(req, r)
	case *kmsg.HeartbeatRequest:
		return ready(encode(req, b.heartbeat(r)))
	case *kmsg.LeaveGroupRequest:
		return ready(encode(req, b.leaveGroup(r)))
	case *kmsg.OffsetCommitRequest:
		return ready(encode(req, b.offsetCommit(r)))
	case *kmsg.OffsetFetchRequest:
		return later(func() response { return encode(req, b.offsetFetch(r)) })
	case *kmsg.ListGroupsRequest:
		return later(func() response { return encode(req, b.listGroups(r)) })
	case *kmsg.DescribeGroupsRequest:
		return later(func() response { return encode(req, b.describeGroups(r)) })
	case *kmsg.AlterConfigsRequest:
		return later(func() response { return encode(req, b.alterConfigs(r)) })
	case *kmsg.IncrementalAlterConfigsRequest:
		return later(func() response { return encode(req, b.incrementalAlterConfigs(r)) })
	case *kmsg.CreatePartitionsRequest:
		return later(func() response { return encode(req, b.createPartitions(r)) })
	case *kmsg.DeleteRecordsRequest:
		return later(func() response { return encode(req, b.deleteRecords(r)) })
	case *kmsg.DescribeLogDirsRequest:
		return later(func() response { return encode(req, b.describeLogDirs(r)) })
	case *kmsg.OffsetDeleteRequest:
		return later(func() response { return encode(req, b.offsetDelete(r)) })
	case *kmsg.DeleteGroupsRequest:
		return ready(encode(req, b.deleteGroups(r)))
	case *kmsg.CreateACLsRequest:
		return ready(encode(req, b.createACLs(r)))
	case *kmsg.DescribeACLsRequest:
		return ready(encode(req, b.describeACLs(r)))
	case *kmsg.DeleteACLsRequest:
		return ready(encode(req, b.deleteACLs(r)))
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return later(func() response { return encode(req, b.describeUserSCRAMCredentials(r)) })
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return later(func() response { return encode(req, b.alterUserSCRAMCredentials(r)) })
	case *kmsg.DescribeClientQuotasRequest:
		return ready(encode(req, b.describeClientQuotas(req, r)))
	case *kmsg.AlterClientQuotasRequest:
		return later(func() response { return encode(req, b.alterClientQuotas(req, r)) })
	}
	// decodeRequest only accepts keys of the table above.
	c.logger.Error("request with no handler", "key", req.Key())
	return ready(nil)
}
