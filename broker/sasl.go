package broker

// The SASL APIs (broker/saslapi) as the root wires them: each connection
// holds its saslapi.Session (conn.auth), handle lets only the APIs of
// saslapi.BeforeLogin through before a login, and a request after the
// session ended closes the connection.

import (
	"time"

	"github.com/tributary-io/tributary/broker/saslapi"
)

// newSASL builds the SASL APIs from what they use of b.
func (b *Broker) newSASL() *saslapi.Handlers {
	return saslapi.New(saslapi.Config{
		Mechanisms: b.cfg.SASLMechanisms, Credentials: b.cfg.Credentials, Logins: b.logins,
		MaxReauth: b.cfg.ConnectionsMaxReauth, Refused: b.metrics.LoginRefused,
	})
}

// Session is the connection's SASL state (saslapi.Conn).
func (c *conn) Session() *saslapi.Session { return &c.auth }

// preAuthAPI reports whether a request may come before SASL
// authentication.
func preAuthAPI(key int16) bool { return saslapi.BeforeLogin(key) }

// errClosedAfterResponse is what a response that ends its connection
// reports once sent (a failed login's).
var errClosedAfterResponse = saslapi.ErrClosedAfterResponse

// sessionExpired reports, and logs, a request that must close its
// connection because the SASL session ended without a new login
// (connections.max.reauth.ms, KIP-368): once the responses already owed
// are written, never in the middle of one.
func (c *conn) sessionExpired(req *request) bool {
	if preAuthAPI(req.Key()) || !c.auth.Expired(time.Now()) {
		return false
	}
	c.logger.Info("closing connection: SASL session expired without re-authentication",
		"principal", c.Principal(), "expired", c.auth.Expires(), "setting", "connections.max.reauth.ms",
		"api", req.Key(), "client_id", req.ClientID)
	return true
}
