package broker

// Re-authentication (KIP-368, connections.max.reauth.ms).
//
// With Config.ConnectionsMaxReauth set, a successful SASL login starts a
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
func (b *Broker) mayReauthenticate(c *conn, mechanism string) bool {
	if b.cfg.ConnectionsMaxReauth <= 0 || !c.Authenticated() || c.auth.reauth {
		return false
	}
	if mechanism != c.auth.mechanism {
		c.logger.Warn("re-authentication refused: it must use the connection's mechanism",
			"mechanism", mechanism, "connection_mechanism", c.auth.mechanism)
		return false
	}
	return true
}

// startSession starts the session of a connection that just logged in and
// returns its lifetime for SaslAuthenticate (0: unlimited).
func (b *Broker) startSession(c *conn) int64 {
	if b.cfg.ConnectionsMaxReauth <= 0 {
		c.auth.expires = time.Time{}
		return 0
	}
	c.auth.expires = time.Now().Add(b.cfg.ConnectionsMaxReauth)
	return b.cfg.ConnectionsMaxReauth.Milliseconds()
}

// sessionExpired reports, and logs, a request that must close its
// connection because the SASL session ended without a new login.
func (c *conn) sessionExpired(req *request) bool {
	if c.auth.expires.IsZero() || preAuthAPI(req.Key()) || time.Now().Before(c.auth.expires) {
		return false
	}
	c.logger.Info("closing connection: SASL session expired without re-authentication",
		"principal", c.Principal(), "expired", c.auth.expires, "setting", "connections.max.reauth.ms",
		"api", req.Key(), "client_id", req.clientID)
	return true
}
