package broker

// In-process connections for this process's own clients: the schema
// registry of `tributary standalone` reaches its broker through
// DialInternal rather than a socket, as InternalPrincipal.
//
// Why a principal of its own: under an authorizer the registry must read,
// describe and create _schemas, and the alternatives each cost the
// operator something — an ACL for User:ANONYMOUS on a PLAINTEXT listener
// (which then admits anyone who can reach that listener), or a SASL user
// and its password for the registry to keep. InternalPrincipal is not a
// User: no SASL login, client certificate or ACL can name it, and only
// code in this process can dial it. It is a super user for the internal
// topics (_schemas, _audit) and for nothing else: every other resource is
// refused to it whatever the ACLs say.

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
)

// InternalPrincipal is the principal of in-process connections.
const InternalPrincipal = acl.InternalPrincipal

// internalAllowed is the authorizer's answer for InternalPrincipal.
func internalAllowed(typ kmsg.ACLResourceType, name string) bool {
	return typ == kmsg.ACLResourceTypeTopic && IsInternalTopic(name)
}

// DialInternal connects to the broker in-process, as InternalPrincipal:
// a kgo.Dialer for this process's own clients. Whatever address it is
// asked for, it reaches this broker, so the client may be given any seed
// (the listeners' addresses, which Metadata also names). Before the
// broker serves its listeners it waits for them as long as ctx allows (a
// client made beside a starting broker should not spend its retries on
// the start); after Close it fails. Metadata names every broker by its
// endpoint of the connection's listener: the first listener's, which the
// client's dialer (this function again) maps back here. No TLS and no
// SASL on a pipe.
func (b *Broker) DialInternal(ctx context.Context, _, _ string) (net.Conn, error) {
	return b.server.DialInternal(ctx, InternalPrincipal)
}
