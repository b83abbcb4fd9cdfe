package broker

// Password guessing over SASL is bounded two ways, as in the schema
// registry's basic auth.
//
// A login as a name that is no user's takes the same steps as one with a
// wrong password: PLAIN derives the password's keys against a dummy
// credential (the default iterations), and SCRAM offers a salt derived from
// the name under a per-process secret with the default iterations — the
// same answer each time the name is tried, as a real user's would be — and
// checks the proof against it. So neither the answers nor their timing
// tell which users exist.
//
// Failed logins are counted per client IP and user (internal/loginlimit):
// past loginlimit.DefaultMax within a minute, that user's further logins
// from the address are refused with SASL_AUTHENTICATION_FAILED, unchecked,
// saying how long to wait, until its minute is over; past
// loginlimit.DefaultMaxPerAddr across users, everyone's from the address
// but users who logged in from it lately. A burst for one user never
// locks out the others at a shared address.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"sync/atomic"

	"github.com/xdg-go/scram"

	"github.com/tributary-io/tributary/internal/loginlimit"
)

// loginGuard is the broker's defence against password guessing.
type loginGuard struct {
	failed loginlimit.Limiter
	secret []byte // keys the made-up salts of unknown users
	// derivations counts PLAIN password derivations, whether the user
	// exists or not: the work a failed login costs.
	derivations atomic.Int64
}

func newLoginGuard() *loginGuard {
	g := &loginGuard{secret: make([]byte, 32)}
	rand.Read(g.secret)
	return g
}

// unknownUser is the credential an unknown user's SCRAM exchange runs
// against: a salt stable for the name and mechanism, unguessable without
// the secret, and no key any proof can match.
func (g *loginGuard) unknownUser(mechanism, user string) scram.StoredCredentials {
	m := hmac.New(sha256.New, g.secret)
	m.Write([]byte(mechanism + "\x00" + user))
	return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(m.Sum(nil)), Iters: DefaultSCRAMIterations}}
}

// plainDummy is what a PLAIN login as an unknown user is derived against.
var plainDummy = scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: "tributary-no-such-user", Iters: DefaultSCRAMIterations}}

// checkPassword is the package's checkPassword, counted.
func (g *loginGuard) checkPassword(mechanism, user, password string, cred scram.StoredCredentials) bool {
	g.derivations.Add(1)
	return checkPassword(mechanism, user, password, cred)
}
