package auth

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
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/xdg-go/scram"

	"github.com/tributary-io/tributary/internal/loginlimit"
)

// Guard is the broker's defence against password guessing.
type Guard struct {
	Failed loginlimit.Limiter
	secret []byte // keys the made-up salts of unknown users
	// derivations counts PLAIN password derivations, whether the user
	// exists or not: the work a failed login costs.
	Derivations atomic.Int64
}

func NewGuard() *Guard {
	g := &Guard{secret: make([]byte, 32)}
	rand.Read(g.secret)
	return g
}

// unknownUser is the credential an unknown user's SCRAM exchange runs
// against: a salt stable for the name and mechanism, unguessable without
// the secret, and no key any proof can match.
func (g *Guard) unknownUser(mechanism, user string) scram.StoredCredentials {
	m := hmac.New(sha256.New, g.secret)
	m.Write([]byte(mechanism + "\x00" + user))
	return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(m.Sum(nil)), Iters: DefaultSCRAMIterations}}
}

// plainDummy is what a PLAIN login as an unknown user is derived against.
var plainDummy = scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: "tributary-no-such-user", Iters: DefaultSCRAMIterations}}

// checkPassword is the package's checkPassword, counted.
func (g *Guard) checkPassword(mechanism, user, password string, cred scram.StoredCredentials) bool {
	g.Derivations.Add(1)
	return checkPassword(mechanism, user, password, cred)
}

// PlainLogin checks a PLAIN token (authzid NUL user NUL password) against
// the user's SCRAM credentials, SCRAM-SHA-512 first.
func (g *Guard) PlainLogin(store CredentialStore, token []byte) (string, error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return "", errors.New("PLAIN token is not authzid NUL user NUL password")
	}
	authz, user, password := string(parts[0]), string(parts[1]), string(parts[2])
	if authz != "" && authz != user {
		return user, fmt.Errorf("user %q may not act as %q", user, authz)
	}
	for _, mech := range []string{MechSCRAM512, MechSCRAM256} {
		cred, ok, err := store.Lookup(user, mech)
		if err != nil {
			return user, err
		}
		if ok {
			if g.checkPassword(mech, user, password, cred) {
				return user, nil
			}
			return user, fmt.Errorf("wrong password for user %q", user)
		}
	}
	g.checkPassword(MechSCRAM512, user, password, plainDummy) // as long as a wrong password (above)
	return user, fmt.Errorf("unknown user %q", user)
}
