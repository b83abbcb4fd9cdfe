// Package saslapi serves SaslHandshake and SaslAuthenticate: the SASL
// exchange of one connection, as Kafka frames it, and the session it
// starts (re-authentication, KIP-368).
//
// It sits between broker/auth, which proves who a client is and knows
// nothing of connections or requests, and broker/netserver, which frames
// requests and holds a connection's principal but knows nothing of Kafka
// APIs: the exchange is requests (so not netserver's) with state per
// connection (so not auth's). Kafka keeps it in its network layer, not
// among its API handlers, for the same reason. A connection hands its
// Session to these handlers through Conn.
//
// It promises: on a SASL listener a connection is authenticated only
// after an exchange whose proof auth checked; until then only the APIs of
// BeforeLogin are served (the broker closes the connection on any other);
// a connection's principal never changes; a failed login closes the
// connection after its answer, and counts towards auth's limit per
// address and user.
package saslapi

import (
	"errors"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/netserver"
)

// Config is what the SASL handlers use from the broker.
type Config struct {
	Mechanisms  []string // served, in the order SaslHandshake lists them
	Credentials auth.CredentialStore
	Logins      *auth.Guard
	// MaxReauth is connections.max.reauth.ms: a login's session length;
	// 0: sessions never end and a second login is refused.
	MaxReauth time.Duration
	// Refused counts a refused login (reason: bad_credentials,
	// rate_limited); nil counts nothing.
	Refused func(mechanism, reason string)
}

// Conn is what the handlers know of a connection: kafkaapi's, its login
// (netserver.Conn's), and its SASL Session.
type Conn interface {
	kafkaapi.Conn
	IP() string
	Authenticated() bool
	Principal() string
	Login(principal string)
	Session() *Session
}

// Session is the SASL state of one connection. Only the connection's read
// goroutine changes it, before it reads the next request.
type Session struct {
	mechanism string // chosen by SaslHandshake, "" before
	scram     *auth.SCRAM
	expires   time.Time // end of the session; zero: never (reauth.go)
	reauth    bool      // an authenticated client is logging in again
}

// Handlers serves the SASL APIs of one broker.
type Handlers struct {
	cfg Config
}

// New returns the SASL APIs over cfg.
func New(cfg Config) *Handlers {
	if cfg.Refused == nil {
		cfg.Refused = func(string, string) {}
	}
	return &Handlers{cfg: cfg}
}

// Register adds SaslHandshake and SaslAuthenticate to r.
func (h *Handlers) Register(r *kafkaapi.Registry) {
	// SaslHandshake v0 is listed for librdkafka and refused (sasl.go).
	r.Register(17, 0, 1, kafkaapi.Start(func(c kafkaapi.Conn, req *kafkaapi.Request, q *kmsg.SASLHandshakeRequest) *kafkaapi.Pending {
		return kafkaapi.Ready(req, h.handshake(c.(Conn), q))
	}))
	r.Register(36, 0, 2, kafkaapi.Start(func(c kafkaapi.Conn, req *kafkaapi.Request, q *kmsg.SASLAuthenticateRequest) *kafkaapi.Pending {
		resp, closing := h.authenticate(c.(Conn), q)
		if closing {
			return netserver.Ready(closeAfter{kafkaapi.Encode(req, resp)})
		}
		return kafkaapi.Ready(req, resp)
	}))
}

// BeforeLogin reports whether a request of API key may come before SASL
// authentication (or after its session ended): ApiVersions and the
// exchange itself.
func BeforeLogin(key int16) bool {
	switch key {
	case netserver.APIVersionsKey, 17, 36:
		return true
	}
	return false
}

// closeAfter is a response after which the connection is closed: its Send
// reports an error, so the writer drops the connection once it is sent.
type closeAfter struct{ netserver.Encoded }

// ErrClosedAfterResponse is what a response that ends its connection
// reports once it is sent.
var ErrClosedAfterResponse = errors.New("connection closed after its last response")

func (r closeAfter) Send(nc net.Conn) error {
	if err := r.Encoded.Send(nc); err != nil {
		return err
	}
	return ErrClosedAfterResponse
}
