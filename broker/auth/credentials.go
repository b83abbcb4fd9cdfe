package auth

// SCRAM credentials: what SASL checks a user's password against. Only the
// salted, iterated keys of RFC 5802 are kept (salt, iteration count,
// StoredKey, ServerKey), never a password: a stolen file does not log
// anyone in, and a PLAIN login is checked by deriving the same keys from
// the password it carries.
//
// In standalone mode the credentials are a file in the data directory,
// written offline by `tributary users set` and read again by the broker
// whenever it changes, so a user added or deleted applies to the next
// login without a restart.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/xdg-go/scram"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// The SASL mechanisms Tributary speaks.
const (
	MechPlain    = "PLAIN"
	MechSCRAM256 = "SCRAM-SHA-256"
	MechSCRAM512 = "SCRAM-SHA-512"
)

// DefaultSCRAMIterations is the PBKDF2 iteration count of new credentials,
// Kafka's default and RFC 7677's minimum.
const DefaultSCRAMIterations = 4096

// CredentialStore keeps the SCRAM credentials of users: a file in the data
// directory (standalone) or ZooKeeper (a cluster; credentials_zk.go).
type CredentialStore interface {
	// Lookup returns the credential of user for a SCRAM mechanism; ok is
	// false for an unknown user or mechanism.
	Lookup(user, mechanism string) (cred scram.StoredCredentials, ok bool, err error)
	// Put stores a credential, replacing the user's older one for the
	// same mechanism.
	Put(user, mechanism string, cred scram.StoredCredentials) error
	// Delete removes user's credential for mechanism, or all of the
	// user's when mechanism is empty; ErrNoCredential if there is none.
	Delete(user, mechanism string) error
	// List returns every user with its mechanisms, sorted by name.
	List() ([]UserCredentials, error)
}

// UserCredentials are the mechanisms a user has credentials for.
type UserCredentials struct {
	User       string
	Mechanisms []MechanismIterations // sorted by mechanism
}

// MechanismIterations describes one credential without its secrets.
type MechanismIterations struct {
	Mechanism  string
	Iterations int
}

// ErrNoCredential is a Delete of something that is not there.
var ErrNoCredential = errors.New("no such credential")

// userCredentials is how both stores encode one user: mechanism to keys.
type userCredentials map[string]fileCredential

func (u userCredentials) lookup(mechanism string) (scram.StoredCredentials, bool) {
	c, ok := u[mechanism]
	if !ok {
		return scram.StoredCredentials{}, false
	}
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
		StoredKey:  c.StoredKey,
		ServerKey:  c.ServerKey,
	}, true
}

func (u userCredentials) describe(user string) UserCredentials {
	uc := UserCredentials{User: user}
	for m, c := range u {
		uc.Mechanisms = append(uc.Mechanisms, MechanismIterations{Mechanism: m, Iterations: c.Iterations})
	}
	sort.Slice(uc.Mechanisms, func(i, j int) bool { return uc.Mechanisms[i].Mechanism < uc.Mechanisms[j].Mechanism })
	return uc
}

func toFileCredential(c scram.StoredCredentials) fileCredential {
	return fileCredential{Salt: []byte(c.Salt), Iterations: c.Iters, StoredKey: c.StoredKey, ServerKey: c.ServerKey}
}

// checkCredential refuses what SCRAM clients would refuse or what would
// weaken the store.
func checkCredential(user, mechanism string, c scram.StoredCredentials) error {
	switch {
	case user == "":
		return errors.New("empty user name")
	case SCRAMHash(mechanism) == nil:
		return fmt.Errorf("%q is not a SCRAM mechanism: use SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
	case c.Iters < DefaultSCRAMIterations || c.Iters > MaxSCRAMIterations:
		return fmt.Errorf("%d iterations is outside %d..%d", c.Iters, DefaultSCRAMIterations, MaxSCRAMIterations)
	case len(c.Salt) == 0:
		return errors.New("empty salt")
	}
	return nil
}

// MaxSCRAMIterations bounds the work one login costs the broker (Kafka's
// limit).
const MaxSCRAMIterations = 16384

// SCRAMHash is the hash of a SCRAM mechanism, nil for others.
func SCRAMHash(mechanism string) scram.HashGeneratorFcn {
	switch mechanism {
	case MechSCRAM256:
		return scram.SHA256
	case MechSCRAM512:
		return scram.SHA512
	}
	return nil
}

// NewSCRAMCredential salts and iterates password for mechanism
// (SCRAM-SHA-256 or SCRAM-SHA-512) with a fresh random salt.
func NewSCRAMCredential(mechanism, user, password string, iterations int) (scram.StoredCredentials, error) {
	h := SCRAMHash(mechanism)
	if h == nil {
		return scram.StoredCredentials{}, fmt.Errorf("%q is not a SCRAM mechanism: use SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
	}
	if iterations < DefaultSCRAMIterations || iterations > MaxSCRAMIterations {
		return scram.StoredCredentials{}, fmt.Errorf("%d iterations is outside %d..%d", iterations, DefaultSCRAMIterations, MaxSCRAMIterations)
	}
	if password == "" {
		return scram.StoredCredentials{}, errors.New("empty password")
	}
	salt := make([]byte, 32)
	rand.Read(salt)
	return deriveCredential(h, user, password, scram.KeyFactors{Salt: string(salt), Iters: iterations})
}

func deriveCredential(h scram.HashGeneratorFcn, user, password string, kf scram.KeyFactors) (scram.StoredCredentials, error) {
	client, err := h.NewClient(user, password, "")
	if err != nil {
		return scram.StoredCredentials{}, fmt.Errorf("user %q: %w", user, err)
	}
	return client.GetStoredCredentialsWithError(kf)
}

// checkPassword reports whether password derives cred's StoredKey: how a
// PLAIN login is verified without a stored password.
func checkPassword(mechanism, user, password string, cred scram.StoredCredentials) bool {
	got, err := deriveCredential(SCRAMHash(mechanism), user, password, cred.KeyFactors)
	return err == nil && subtle.ConstantTimeCompare(got.StoredKey, cred.StoredKey) == 1
}

// CredentialFilePath is where a standalone broker keeps its users.
func CredentialFilePath(dataDir string) string { return filepath.Join(dataDir, "credentials.json") }

// CredentialFile is a CredentialStore kept in one JSON file (mode 0600),
// replaced atomically on every change.
type CredentialFile struct {
	path string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	users   map[string]userCredentials
}

type credentialFileData struct {
	Version int                        `json:"version"`
	Users   map[string]userCredentials `json:"users"`
}

type fileCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// OpenCredentialFile returns the store in path; a missing file is a store
// without users.
func OpenCredentialFile(path string) *CredentialFile { return &CredentialFile{path: path} }

// load reads the file again if it changed since the last read.
func (f *CredentialFile) load() (map[string]userCredentials, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.path)
	if errors.Is(err, os.ErrNotExist) {
		f.users, f.modTime, f.size = nil, time.Time{}, 0
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	if f.users != nil && st.ModTime().Equal(f.modTime) && st.Size() == f.size {
		return f.users, nil
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	var d credentialFileData
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("credentials %s: %w", f.path, err)
	}
	if d.Users == nil {
		d.Users = map[string]userCredentials{}
	}
	f.users, f.modTime, f.size = d.Users, st.ModTime(), st.Size()
	return f.users, nil
}

// Lookup implements CredentialStore.
func (f *CredentialFile) Lookup(user, mechanism string) (scram.StoredCredentials, bool, error) {
	users, err := f.load()
	if err != nil {
		return scram.StoredCredentials{}, false, err
	}
	c, ok := users[user].lookup(mechanism)
	return c, ok, nil
}

// Set stores a new credential of user for mechanism, derived from password
// with a fresh salt.
func (f *CredentialFile) Set(user, mechanism, password string, iterations int) error {
	cred, err := NewSCRAMCredential(mechanism, user, password, iterations)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return f.Put(user, mechanism, cred)
}

// Put implements CredentialStore.
func (f *CredentialFile) Put(user, mechanism string, cred scram.StoredCredentials) error {
	if err := checkCredential(user, mechanism, cred); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return f.update(func(users map[string]userCredentials) error {
		if users[user] == nil {
			users[user] = userCredentials{}
		}
		users[user][mechanism] = toFileCredential(cred)
		return nil
	})
}

// Delete implements CredentialStore.
func (f *CredentialFile) Delete(user, mechanism string) error {
	return f.update(func(users map[string]userCredentials) error {
		if _, ok := users[user]; !ok {
			return fmt.Errorf("credentials: user %q: %w", user, ErrNoCredential)
		}
		if mechanism == "" {
			delete(users, user)
			return nil
		}
		if _, ok := users[user][mechanism]; !ok {
			return fmt.Errorf("credentials: user %q, %s: %w", user, mechanism, ErrNoCredential)
		}
		delete(users[user], mechanism)
		if len(users[user]) == 0 {
			delete(users, user)
		}
		return nil
	})
}

// List implements CredentialStore.
func (f *CredentialFile) List() ([]UserCredentials, error) {
	users, err := f.load()
	if err != nil {
		return nil, err
	}
	out := make([]UserCredentials, 0, len(users))
	for name, u := range users {
		out = append(out, u.describe(name))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out, nil
}

// update applies fn to a fresh read of the file and replaces the file with
// the result. The offline `tributary users` may replace it while the broker
// does, so each write goes through a temporary file of its own: the last
// rename wins, whole.
func (f *CredentialFile) update(fn func(map[string]userCredentials) error) error {
	users, err := f.load()
	if err != nil {
		return err
	}
	next := map[string]userCredentials{}
	for u, ms := range users {
		next[u] = userCredentials{}
		for m, c := range ms {
			next[u][m] = c
		}
	}
	if err := fn(next); err != nil {
		return err
	}
	data, err := json.MarshalIndent(credentialFileData{Version: 1, Users: next}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	if err := atomicfile.Write(f.path, data, atomicfile.Perm(0o600), atomicfile.UniqueTemp()); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return nil
}

// CredentialFromSalted derives the stored keys of RFC 5802 from a salted
// password: StoredKey = H(HMAC(salted, "Client Key")), ServerKey =
// HMAC(salted, "Server Key").
func CredentialFromSalted(h scram.HashGeneratorFcn, salted, salt []byte, iterations int) scram.StoredCredentials {
	mac := func(msg string) []byte {
		m := hmac.New(h, salted)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	hash := h()
	hash.Write(mac("Client Key"))
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: iterations},
		StoredKey:  hash.Sum(nil),
		ServerKey:  mac("Server Key"),
	}
}
