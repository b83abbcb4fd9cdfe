package broker

// SaslHandshake and SaslAuthenticate.
//
// On a SASL listener a client picks a mechanism with SaslHandshake and then
// exchanges SASL tokens in SaslAuthenticate requests until it has proved
// who it is. Until then the connection answers only ApiVersions,
// SaslHandshake and SaslAuthenticate; any other request closes it, as in
// Kafka. A failed login is answered with SASL_AUTHENTICATION_FAILED, logged
// with the user and address, and the connection closed after the answer.
//
// SaslHandshake v0, after which Kafka reads raw SASL tokens outside
// request frames, is answered ILLEGAL_SASL_STATE: every client since Kafka
// 1.0 uses v1. It is still listed in ApiVersions because librdkafka
// enables SASL only when the advertised range includes v0.
// Re-authentication (KIP-368) and session expiry: reauth.go.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/quota"
)

func init() {
	// SaslHandshake v0 is listed for librdkafka and refused (see above).
	register(17, 0, 1, func(b *Broker, c *conn, req *request) *pending {
		return ready(encode(req, b.saslHandshake(c, req.Request.(*kmsg.SASLHandshakeRequest))))
	})
	register(36, 0, 2, func(b *Broker, c *conn, req *request) *pending {
		return ready(b.saslAuthenticate(c, req, req.Request.(*kmsg.SASLAuthenticateRequest)))
	})
}

// connAuth is the SASL state of one connection; its principal, and whether
// it is authenticated, are the connection's (netserver.Conn: Principal,
// Authenticated, Login).
type connAuth struct {
	mechanism string // chosen by SaslHandshake, "" before
	scram     *auth.SCRAM
	expires   time.Time // end of the session; zero: never (reauth.go)
	reauth    bool      // an authenticated client is logging in again
}

// preAuthAPI reports whether a request may come before SASL
// authentication.
func preAuthAPI(key int16) bool {
	switch key {
	case apiVersionsKey, 17, 36:
		return true
	}
	return false
}

func (b *Broker) saslHandshake(c *conn, req *kmsg.SASLHandshakeRequest) *kmsg.SASLHandshakeResponse {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SupportedMechanisms = b.cfg.SASLMechanisms
	switch {
	case req.Version == 0:
		c.logger.Warn("SaslHandshake v0 (raw SASL tokens) is not served; the client must use v1", "mechanism", req.Mechanism)
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case !c.listener.Protocol.SASL() || c.auth.mechanism != "" && !b.mayReauthenticate(c, req.Mechanism):
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case !slices.Contains(b.cfg.SASLMechanisms, req.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	default:
		c.auth.reauth = c.Authenticated()
		c.auth.mechanism = req.Mechanism
		if auth.SCRAMHash(req.Mechanism) != nil {
			c.auth.scram = auth.NewSCRAM(req.Mechanism, b.cfg.Credentials, b.logins)
		}
	}
	return resp
}

// saslAuthenticate runs one step of the exchange. A failure closes the
// connection once its answer is written.
func (b *Broker) saslAuthenticate(c *conn, req *request, r *kmsg.SASLAuthenticateRequest) response {
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	if c.auth.mechanism == "" || c.Authenticated() && !c.auth.reauth {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate without a SaslHandshake choosing a mechanism, or after authentication"
		resp.ErrorMessage = &msg
		c.logger.Warn("closing connection: SASL exchange out of order")
		return closeAfter{encode(req, resp)}
	}
	named, asUser := saslUser(c, r.SASLAuthBytes)
	if ok, wait, n := b.logins.Failed.Allow(c.ip, named); asUser && !ok {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := fmt.Sprintf("too many failed logins from %s (%d within a minute): logins from it are refused for %s more", c.ip, n, wait.Round(time.Second))
		resp.ErrorMessage = &msg
		c.logger.Warn("closing connection: too many failed logins from its address", "failures", n, "refused_for", wait.Round(time.Second))
		b.metrics.loginRefused(c.auth.mechanism, "rate_limited")
		return closeAfter{encode(req, resp)}
	}
	var (
		reply []byte
		done  bool
		user  string
		err   error
	)
	if c.auth.mechanism == auth.MechPlain {
		user, err = b.logins.PlainLogin(b.cfg.Credentials, r.SASLAuthBytes)
		done = err == nil
	} else {
		reply, done, err = c.auth.scram.Next(r.SASLAuthBytes)
		user = c.auth.scram.User()
	}
	if err != nil {
		b.logins.Failed.Fail(c.ip, user)
		b.metrics.loginRefused(c.auth.mechanism, "bad_credentials")
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := fmt.Sprintf("authentication failed: invalid credentials with SASL mechanism %s", c.auth.mechanism)
		resp.ErrorMessage = &msg
		c.logger.Warn("closing connection: SASL authentication failed",
			"user", user, "mechanism", c.auth.mechanism, "err", err)
		return closeAfter{encode(req, resp)}
	}
	resp.SASLAuthBytes = reply
	if done {
		if c.auth.reauth && "User:"+user != c.Principal() {
			// A connection's principal never changes (its ACL decisions
			// and quotas were made for it), as in Kafka.
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := fmt.Sprintf("re-authentication as %q on a connection of %q: a connection keeps its user", user, quota.User(c.Principal()))
			resp.ErrorMessage = &msg
			c.logger.Warn("closing connection: re-authentication as another user", "user", user, "principal", c.Principal())
			return closeAfter{encode(req, resp)}
		}
		if c.auth.reauth {
			c.logger.Debug("SASL re-authentication succeeded", "user", user, "mechanism", c.auth.mechanism)
		} else {
			c.logger.Info("SASL authentication succeeded", "user", user, "mechanism", c.auth.mechanism)
		}
		b.logins.Failed.Succeed(c.ip, user)
		c.Login("User:" + user)
		c.auth.reauth = false
		c.auth.scram = nil
		resp.SessionLifetimeMillis = b.startSession(c)
	}
	return encode(req, resp)
}

// saslUser returns the user a SASL step logs in as, and whether the step
// checks a password (PLAIN's only step, SCRAM's proof): failed logins are
// limited per address and user (internal/loginlimit), and SCRAM's first
// step, which names the user, guesses nothing.
func saslUser(c *conn, token []byte) (string, bool) {
	if c.auth.mechanism == auth.MechPlain {
		if parts := bytes.SplitN(token, []byte{0}, 3); len(parts) == 3 {
			return string(parts[1]), true
		}
		return "", true
	}
	return c.auth.scram.User(), c.auth.scram.User() != ""
}

// closeAfter is a response after which the connection is closed: its Send
// reports an error, so the writer drops the connection once it is sent.
type closeAfter struct{ encoded }

var errClosedAfterResponse = errors.New("connection closed after its last response")

func (r closeAfter) Send(nc net.Conn) error {
	if err := r.encoded.Send(nc); err != nil {
		return err
	}
	return errClosedAfterResponse
}
