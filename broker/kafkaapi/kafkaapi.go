// Package kafkaapi is what a Kafka API handler sees, wherever it lives:
// the request (its header and who sent it), the connection it came on, the
// adapters that run a handler at once or in its own goroutine, and the
// registry of the APIs a broker serves.
//
// The registry is the one list of APIs and versions: ApiVersions
// advertises exactly its ranges, the connection layer refuses anything
// outside them before decoding (Supports), the metrics keep one series per
// registered API and version, and requests are dispatched through it. The
// root broker builds one in New from the handler packages'
// constructors; it is complete before the broker
// serves and only read afterwards, so reading it takes no lock.
//
// Handlers authorize their requests themselves, through broker/acl's
// helper (Authorizer.May*, Filter) with their Request's Who, beside their versions, so an API's rules are in its one file.
package kafkaapi

import (
	"fmt"
	"log/slog"
	"net"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/netserver"
)

// Request is a decoded request with its header and who sent it.
type Request struct {
	kmsg.Request
	CorrelationID int32
	ClientID      string
	// Who is the connection's principal and IP, which the handler asks
	// broker/acl's helper about.
	acl.Who
	// Quota is the connection's throttle; nil in fuzz tests.
	Quota *netserver.Throttle
}

// Conn is what a handler may know of the connection a request came on.
type Conn interface {
	Listener() netserver.Listener // the listener it came through
	Logger() *slog.Logger         // with the client's address
	RemoteAddr() net.Addr
}

// Serve starts serving one decoded request of its API and returns its
// pending response (nil closes the connection).
type Serve func(c Conn, req *Request) *netserver.Pending

// Versions is a range of versions of one API that the broker really
// implements.
type Versions struct{ Min, Max int16 }

// API is one registered API.
type API struct {
	Versions
	Serve Serve
}

// Registry holds the registered APIs by key.
type Registry struct {
	apis map[int16]API
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{apis: map[int16]API{}} }

// Register declares that the broker serves API key in versions min..max
// with serve. A key registered twice or a range kmsg cannot decode is a
// programming error, and panics.
func (r *Registry) Register(key, min, max int16, serve Serve) {
	if _, dup := r.apis[key]; dup {
		panic(fmt.Sprintf("api key %d registered twice", key))
	}
	kr := kmsg.RequestForKey(key)
	if kr == nil || min < 0 || min > max || max > kr.MaxVersion() {
		panic(fmt.Sprintf("api key %d: cannot serve versions %d..%d", key, min, max))
	}
	r.apis[key] = API{Versions{min, max}, serve}
}

// Lookup returns the API registered for key.
func (r *Registry) Lookup(key int16) (API, bool) {
	a, ok := r.apis[key]
	return a, ok
}

// Supports reports whether key is served at version (netserver's check
// before decoding).
func (r *Registry) Supports(key, version int16) bool {
	a, ok := r.apis[key]
	return ok && version >= a.Min && version <= a.Max
}

// Keys returns the registered keys in order.
func (r *Registry) Keys() []int16 {
	keys := make([]int16, 0, len(r.apis))
	for k := range r.apis {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// APIVersions lists the registered APIs and ranges in key order, as
// ApiVersions advertises them.
func (r *Registry) APIVersions() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(r.apis))
	for _, k := range r.Keys() {
		a := r.apis[k]
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: a.Min, MaxVersion: a.Max})
	}
	return keys
}
