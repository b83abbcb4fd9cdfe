package broker

// ApiVersions.
//
// Lists the registered APIs and their versions (the broker's registry,
// broker/kafkaapi). The response
// header is always v0 (no tagged fields), whatever the request version, so
// that a client can read it before it knows which versions we speak. A request for a version
// newer than ours gets UNSUPPORTED_VERSION in a v0 body that still lists our
// ranges, and the client retries with one of them.

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiVersionsKey, 0, 4, now((*Broker).apiVersions))
}

func (b *Broker) apiVersions(_ *request, _ *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ApiKeys = b.apis.APIVersions()
	return resp
}

// apiVersionsUnsupported answers an ApiVersions request of a version we do
// not know, in the v0 format every client can read.
func (b *Broker) apiVersionsUnsupported(correlationID int32) response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = b.apis.APIVersions()
	resp.SetVersion(0)
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(correlationID))
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return encoded(buf)
}
