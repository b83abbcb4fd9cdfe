package saslapi

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
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/quota"
)

func (h *Handlers) handshake(c Conn, req *kmsg.SASLHandshakeRequest) *kmsg.SASLHandshakeResponse {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = h.cfg.Mechanisms
	ss := c.Session()
	switch {
	case req.Version == 0:
		c.Logger().Warn("SaslHandshake v0 (raw SASL tokens) is not served; the client must use v1", "mechanism", req.Mechanism)
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case !c.Listener().Protocol.SASL() || ss.mechanism != "" && !h.mayReauthenticate(c, req.Mechanism):
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case !slices.Contains(h.cfg.Mechanisms, req.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	default:
		ss.reauth = c.Authenticated()
		ss.mechanism = req.Mechanism
		if auth.SCRAMHash(req.Mechanism) != nil {
			ss.scram = auth.NewSCRAM(req.Mechanism, h.cfg.Credentials, h.cfg.Logins)
		}
	}
	return resp
}

// authenticate runs one step of the exchange. A failure (closing) closes
// the connection once its answer is written.
func (h *Handlers) authenticate(c Conn, r *kmsg.SASLAuthenticateRequest) (resp *kmsg.SASLAuthenticateResponse, closing bool) {
	resp = r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	ss, ip, log := c.Session(), c.IP(), c.Logger()
	if ss.mechanism == "" || c.Authenticated() && !ss.reauth {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate without a SaslHandshake choosing a mechanism, or after authentication"
		resp.ErrorMessage = &msg
		log.Warn("closing connection: SASL exchange out of order")
		return resp, true
	}
	named, asUser := ss.user(r.SASLAuthBytes)
	if ok, wait, n := h.cfg.Logins.Failed.Allow(ip, named); asUser && !ok {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := fmt.Sprintf("too many failed logins from %s (%d within a minute): logins from it are refused for %s more", ip, n, wait.Round(time.Second))
		resp.ErrorMessage = &msg
		log.Warn("closing connection: too many failed logins from its address", "failures", n, "refused_for", wait.Round(time.Second))
		h.cfg.Refused(ss.mechanism, "rate_limited")
		return resp, true
	}
	var (
		reply []byte
		done  bool
		user  string
		err   error
	)
	if ss.mechanism == auth.MechPlain {
		user, err = h.cfg.Logins.PlainLogin(h.cfg.Credentials, r.SASLAuthBytes)
		done = err == nil
	} else {
		reply, done, err = ss.scram.Next(r.SASLAuthBytes)
		user = ss.scram.User()
	}
	if err != nil {
		h.cfg.Logins.Failed.Fail(ip, user)
		h.cfg.Refused(ss.mechanism, "bad_credentials")
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := fmt.Sprintf("authentication failed: invalid credentials with SASL mechanism %s", ss.mechanism)
		resp.ErrorMessage = &msg
		log.Warn("closing connection: SASL authentication failed",
			"user", user, "mechanism", ss.mechanism, "err", err)
		return resp, true
	}
	resp.SASLAuthBytes = reply
	if done {
		if ss.reauth && "User:"+user != c.Principal() {
			// A connection's principal never changes (its ACL decisions
			// and quotas were made for it), as in Kafka.
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := fmt.Sprintf("re-authentication as %q on a connection of %q: a connection keeps its user", user, quota.User(c.Principal()))
			resp.ErrorMessage = &msg
			log.Warn("closing connection: re-authentication as another user", "user", user, "principal", c.Principal())
			return resp, true
		}
		if ss.reauth {
			log.Debug("SASL re-authentication succeeded", "user", user, "mechanism", ss.mechanism)
		} else {
			log.Info("SASL authentication succeeded", "user", user, "mechanism", ss.mechanism)
		}
		h.cfg.Logins.Failed.Succeed(ip, user)
		c.Login("User:" + user)
		ss.reauth = false
		ss.scram = nil
		resp.SessionLifetimeMillis = h.startSession(ss)
	}
	return resp, false
}

// user returns the user a SASL step logs in as, and whether the step
// checks a password (PLAIN's only step, SCRAM's proof): failed logins are
// limited per address and user (internal/loginlimit), and SCRAM's first
// step, which names the user, guesses nothing.
func (ss *Session) user(token []byte) (string, bool) {
	if ss.mechanism == auth.MechPlain {
		if parts := bytes.SplitN(token, []byte{0}, 3); len(parts) == 3 {
			return string(parts[1]), true
		}
		return "", true
	}
	return ss.scram.User(), ss.scram.User() != ""
}
