package registry

// HTTP basic authentication with roles. Users are the broker's SASL users:
// a password is checked against the salted, iterated SCRAM keys the broker
// keeps (`tributary users set`), by deriving the same keys from the
// password the request carries, so no registry ever stores a password and
// one password serves a user on both the Kafka and the REST side.
//
// Each user has one role, which decides the requests it may make:
//
//	reader  every GET, and POST /subjects/{subject} (looking a schema up)
//	writer  reader's, and registering (POST /subjects/{subject}/versions)
//	        and checking compatibility (POST /compatibility/...)
//	admin   writer's, and every PUT and DELETE: levels (/config), modes
//	        (/mode), deleting subjects and versions
//
// A request without valid credentials gets 401 (40101) and a
// WWW-Authenticate challenge; an authenticated user without the role gets
// 403 (40301) — both in Confluent's error shape.
//
// Password guessing is bounded two ways. A name that is no user costs the
// same key derivation as a wrong password (against a fixed dummy salt and
// the default iterations), so the time of a 401 does not tell which users
// exist. And once a user's credentials have been wrong
// loginlimit.DefaultMax times within a minute from one client address (or
// anyone's loginlimit.DefaultMaxPerAddr times, for users that have not
// logged in from it lately), those requests get 429 (42901) with
// Retry-After, unchecked, until the minute is over; other users at that
// address are not affected (internal/loginlimit).

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdg-go/scram"

	"github.com/tributary-io/tributary/internal/loginlimit"
)

// Role is what a user may do with the registry; each role includes the
// ones before it.
type Role int

// The roles, from least to most privileged.
const (
	RoleNone Role = iota
	RoleReader
	RoleWriter
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RoleReader:
		return "reader"
	case RoleWriter:
		return "writer"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// ParseRole reads "reader", "writer" or "admin".
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "reader":
		return RoleReader, nil
	case "writer":
		return RoleWriter, nil
	case "admin":
		return RoleAdmin, nil
	}
	return RoleNone, fmt.Errorf("%q is not a role: use reader, writer or admin", s)
}

// Credentials is where passwords are checked: the broker's SCRAM
// credential store (broker.CredentialFile, or ZooKeeper's /config/users).
type Credentials interface {
	Lookup(user, mechanism string) (cred scram.StoredCredentials, ok bool, err error)
}

// Roles tells the role of a user; ok is false for a user without one.
type Roles interface {
	Role(user string) (role Role, ok bool, err error)
}

// BasicAuth checks HTTP basic credentials and roles. Its zero value is not
// usable: set Credentials and Roles. A nil *BasicAuth admits everyone.
type BasicAuth struct {
	Credentials Credentials
	Roles       Roles
	// Realm is named in the 401 challenge. Default: "Tributary Schema Registry".
	Realm string
	// FailedLogins limits wrong credentials per client address and user.
	// Default: loginlimit's defaults (10 a minute per user and address,
	// 100 per address across users).
	FailedLogins *loginlimit.Limiter

	derivations atomic.Int64 // password key derivations, see Derivations
	// Logins refused: wrong credentials, and attempts refused unchecked
	// by FailedLogins (the tributary_registry_logins_refused_total metric).
	badCredentials, rateLimited atomic.Int64

	// The roles and credential-store errors last logged: the operator
	// gets one line per distinct error, not one per refused request.
	rolesErr, credErr failureLog

	once    sync.Once
	key     []byte // hides passwords in the cache
	mu      sync.Mutex
	checked map[string]checkedPassword
}

// checkedPassword remembers a password that derived a user's StoredKey:
// basic auth sends the password with every request, and deriving SCRAM
// keys costs thousands of hash iterations, so a serializer fetching schemas
// would otherwise pay that on each lookup. Only an HMAC of the password
// under a per-process random key is kept, and the entry holds only while
// the stored credential is the same one (a changed password or a deleted
// user is noticed at the next request).
type checkedPassword struct {
	mac       []byte
	storedKey []byte
}

// maxCheckedPasswords bounds the cache; when full it starts over.
const maxCheckedPasswords = 4096

// dummyKeyFactors are what a name that is no user's is derived against:
// the default iterations of `tributary users set`, so the derivation costs
// what a real user's would.
var dummyKeyFactors = scram.KeyFactors{Salt: "tributary-registry-no-such-user", Iters: 4096}

// Derivations is how many password key derivations a checks have run: one
// per login that is not answered from the cache, whether the user exists
// or not.
func (a *BasicAuth) Derivations() int64 { return a.derivations.Load() }

// derive runs the salted, iterated SCRAM key derivation of password.
func (a *BasicAuth) derive(h scram.HashGeneratorFcn, user, password string, kf scram.KeyFactors) (scram.StoredCredentials, error) {
	a.derivations.Add(1)
	client, err := h.NewClient(user, password, "")
	if err != nil {
		return scram.StoredCredentials{}, err // a name or password SASLprep refuses
	}
	return client.GetStoredCredentialsWithError(kf)
}

// scramMechanisms are tried in this order for a user's credential.
var scramMechanisms = []struct {
	name string
	hash scram.HashGeneratorFcn
}{{"SCRAM-SHA-512", scram.SHA512}, {"SCRAM-SHA-256", scram.SHA256}}

// authenticate returns the user whose credentials r carries; ok is false
// when they are missing or wrong.
func (a *BasicAuth) authenticate(r *http.Request) (user string, ok bool, err error) {
	user, password, given := r.BasicAuth()
	if !given || user == "" {
		return "", false, nil
	}
	a.init()
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(user + "\x00" + password))
	sum := mac.Sum(nil)
	for _, m := range scramMechanisms {
		cred, found, err := a.Credentials.Lookup(user, m.name)
		if err != nil {
			return "", false, err
		}
		if !found {
			continue
		}
		a.mu.Lock()
		c, seen := a.checked[user]
		a.mu.Unlock()
		if seen && hmac.Equal(c.mac, sum) && subtle.ConstantTimeCompare(c.storedKey, cred.StoredKey) == 1 {
			return user, true, nil
		}
		got, err := a.derive(m.hash, user, password, cred.KeyFactors)
		if err != nil || subtle.ConstantTimeCompare(got.StoredKey, cred.StoredKey) != 1 {
			return "", false, nil
		}
		a.mu.Lock()
		if len(a.checked) >= maxCheckedPasswords {
			clear(a.checked)
		}
		a.checked[user] = checkedPassword{mac: sum, storedKey: cred.StoredKey}
		a.mu.Unlock()
		return user, true, nil
	}
	// No such user: pay for a derivation all the same, so that the answer
	// takes as long as a wrong password's.
	a.derive(scramMechanisms[0].hash, user, password, dummyKeyFactors)
	return "", false, nil
}

func (a *BasicAuth) init() {
	a.once.Do(func() {
		a.key = make([]byte, 32)
		rand.Read(a.key)
		a.checked = map[string]checkedPassword{}
		if a.FailedLogins == nil {
			a.FailedLogins = &loginlimit.Limiter{}
		}
	})
}

// clientAddr is the address failed logins are counted under: the
// connection's IP, without its port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// RequiredRole is the role a request needs. Methods and paths the API does
// not have need admin, so that a route added later is closed until it is
// classified here.
func RequiredRole(method, path string) Role {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	if seg[0] == "contexts" && len(seg) > 2 {
		seg = seg[2:] // the same API within a context (context.go)
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		return RoleReader
	case http.MethodPost:
		switch {
		case seg[0] == "subjects" && len(seg) == 2:
			return RoleReader // lookup: is this schema registered here?
		case seg[0] == "subjects" && len(seg) == 3 && seg[2] == "versions":
			return RoleWriter
		case seg[0] == "compatibility":
			return RoleWriter
		}
	}
	return RoleAdmin
}

// handler puts authentication and the role check in front of h. A roles
// error reaches the client as a 500 naming the file; logger tells the
// operator, who may not see the client's answer.
func (a *BasicAuth) handler(h http.Handler, logger *slog.Logger) http.Handler {
	if a == nil {
		return h
	}
	realm := a.Realm
	if realm == "" {
		realm = "Tributary Schema Registry"
	}
	a.init()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := clientAddr(r)
		name, _, given := r.BasicAuth()
		if given {
			if ok, wait, n := a.FailedLogins.Allow(addr, name); !ok {
				secs := int(wait.Round(time.Second) / time.Second)
				w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
				a.rateLimited.Add(1)
				writeError(w, &apiError{codeTooManyLogins, fmt.Sprintf("Too many failed logins from %s (%d within the limit's window, counted per user and for the address as a whole): try again in %s", addr, n, wait.Round(time.Second))})
				return
			}
		}
		user, ok, err := a.authenticate(r)
		if err != nil {
			a.credErr.failed(logger, "schema registry: checking credentials failed; requests with credentials are refused with 500 until the credential store answers", err)
			writeError(w, &apiError{http.StatusInternalServerError, fmt.Sprintf("checking credentials failed: %v", err)})
			return
		}
		a.credErr.recovered(logger, "schema registry: credentials can be checked again")
		if ok {
			a.FailedLogins.Succeed(addr, user)
		}
		if !ok {
			if given {
				a.FailedLogins.Fail(addr, name)
				a.badCredentials.Add(1)
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q, charset=\"UTF-8\"", realm))
			writeError(w, &apiError{codeUnauthorized, "Unauthorized: send HTTP basic credentials of a registry user"})
			return
		}
		need := RequiredRole(r.Method, r.URL.Path)
		role, found, err := a.Roles.Role(user)
		if err != nil {
			a.rolesErr.failed(logger, "schema registry: reading roles failed; every authenticated request is refused with 500 until it is fixed", err)
			writeError(w, &apiError{http.StatusInternalServerError, fmt.Sprintf("reading roles failed: %v", err)})
			return
		}
		a.rolesErr.recovered(logger, "schema registry: roles readable again; requests are checked against them")
		if !found || role < need {
			writeError(w, &apiError{codeForbidden, fmt.Sprintf("User %s (role %s) is not permitted to %s %s: it needs the %s role", user, role, r.Method, r.URL.Path, need)})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// failureLog logs a failure that repeats with every request once per
// distinct error, and its end once.
type failureLog struct{ last atomic.Pointer[string] }

// failed logs what with err unless err is the one logged last.
func (f *failureLog) failed(logger *slog.Logger, what string, err error) {
	msg := err.Error()
	last := f.last.Load()
	if last != nil && *last == msg {
		return
	}
	if f.last.CompareAndSwap(last, &msg) {
		logger.Error(what, "err", err)
	}
}

// recovered logs what once after a failure was logged.
func (f *failureLog) recovered(logger *slog.Logger, what string) {
	if f.last.Load() != nil && f.last.Swap(nil) != nil {
		logger.Info(what)
	}
}
