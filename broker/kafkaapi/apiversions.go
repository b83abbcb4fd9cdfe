package kafkaapi

// ApiVersions (key 18), versions 0-4: the registry lists itself.
//
// Lists the registered APIs and their versions. It lives with the
// registry, not in a handler package, because it is the registry's own
// listing and must be served on every connection before anything else,
// SASL included. The response header is always v0 (no tagged fields),
// whatever the request version, so that a client can read it before it
// knows which versions we speak. A request for a version newer than ours
// gets UNSUPPORTED_VERSION in a v0 body that still lists our ranges
// (APIVersionsUnsupported, which the connection layer answers before
// decoding), and the client retries with one of them.

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/netserver"
)

// RegisterAPIVersions adds ApiVersions to r, answered from r itself: what
// is registered when the broker serves is what it advertises.
func (r *Registry) RegisterAPIVersions() {
	r.Register(netserver.APIVersionsKey, 0, 4, Now(func(*Request, *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ApiKeys = r.APIVersions()
		return resp
	}))
}

// APIVersionsUnsupported answers an ApiVersions request of a version we do
// not know, in the v0 format every client can read
// (netserver.Config.APIVersionsFallback).
func (r *Registry) APIVersionsUnsupported(correlationID int32) netserver.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = r.APIVersions()
	resp.SetVersion(0)
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(correlationID))
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return netserver.Encoded(buf)
}
