package saslapi

// Re-authentication (KIP-368, connections.max.reauth.ms).
//
// With Config.MaxReauth set (the broker's Config.ConnectionsMaxReauth), a successful SASL login starts a
// session of that length, told to the client in SaslAuthenticate v1+
// (session_lifetime_ms). Before it ends the client logs in again on the
// same connection: SaslHandshake and SaslAuthenticate with the mechanism
// and user it first used, while its other requests go on being served. A
// request other than ApiVersions or the SASL exchange that arrives after
// the session ended closes the connection, unanswered, once the responses
// already owed are written: never in the middle of one. Clients that
// cannot re-authenticate (SaslAuthenticate v0) are held to the same
// limit and reconnect, as KIP-368 intends: a deleted user or changed
// password then takes effect on every connection within the limit.
//
// Without it (the default, as in Kafka) sessions never expire, and a login
// on an authenticated connection is refused with ILLEGAL_SASL_STATE.

import "time"

// mayReauthenticate reports whether a SaslHandshake on a connection that
// already chose a mechanism starts a re-authentication.
func (h *Handlers) mayReauthenticate(c Conn, mechanism string) bool {
	ss := c.Session()
	if h.cfg.MaxReauth <= 0 || !c.Authenticated() || ss.reauth {
		return false
	}
	if mechanism != ss.mechanism {
		c.Logger().Warn("re-authentication refused: it must use the connection's mechanism",
			"mechanism", mechanism, "connection_mechanism", ss.mechanism)
		return false
	}
	return true
}

// startSession starts the session of a connection that just logged in and
// returns its lifetime for SaslAuthenticate (0: unlimited).
func (h *Handlers) startSession(ss *Session) int64 {
	if h.cfg.MaxReauth <= 0 {
		ss.expires = time.Time{}
		return 0
	}
	ss.expires = time.Now().Add(h.cfg.MaxReauth)
	return h.cfg.MaxReauth.Milliseconds()
}

// Expired reports whether the session ended without a new login by now;
// never for a connection without one (no login, or no limit).
func (ss *Session) Expired(now time.Time) bool {
	return !ss.expires.IsZero() && !now.Before(ss.expires)
}

// Expires is when the session ends; zero: never.
func (ss *Session) Expires() time.Time { return ss.expires }
