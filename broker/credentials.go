package broker

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
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/xdg-go/scram"
)

// The SASL mechanisms Tributary speaks.
const (
	mechPlain    = "PLAIN"
	mechSCRAM256 = "SCRAM-SHA-256"
	mechSCRAM512 = "SCRAM-SHA-512"
)

// DefaultSCRAMIterations is the PBKDF2 iteration count of new credentials,
// Kafka's default and RFC 7677's minimum.
const DefaultSCRAMIterations = 4096

// CredentialStore looks up the SCRAM credential of a user for one SCRAM
// mechanism. ok is false for an unknown user or mechanism.
type CredentialStore interface {
	Lookup(user, mechanism string) (cred scram.StoredCredentials, ok bool, err error)
}

// scramHash is the hash of a SCRAM mechanism, nil for others.
func scramHash(mechanism string) scram.HashGeneratorFcn {
	switch mechanism {
	case mechSCRAM256:
		return scram.SHA256
	case mechSCRAM512:
		return scram.SHA512
	}
	return nil
}

// NewSCRAMCredential salts and iterates password for mechanism
// (SCRAM-SHA-256 or SCRAM-SHA-512) with a fresh random salt.
func NewSCRAMCredential(mechanism, user, password string, iterations int) (scram.StoredCredentials, error) {
	h := scramHash(mechanism)
	if h == nil {
		return scram.StoredCredentials{}, fmt.Errorf("%q is not a SCRAM mechanism: use SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
	}
	if iterations < DefaultSCRAMIterations {
		return scram.StoredCredentials{}, fmt.Errorf("%d iterations is below the minimum of %d", iterations, DefaultSCRAMIterations)
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
	got, err := deriveCredential(scramHash(mechanism), user, password, cred.KeyFactors)
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
	users   map[string]map[string]fileCredential
}

type credentialFileData struct {
	Version int                                  `json:"version"`
	Users   map[string]map[string]fileCredential `json:"users"`
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
func (f *CredentialFile) load() (map[string]map[string]fileCredential, error) {
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
		d.Users = map[string]map[string]fileCredential{}
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
	c, ok := users[user][mechanism]
	if !ok {
		return scram.StoredCredentials{}, false, nil
	}
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
		StoredKey:  c.StoredKey,
		ServerKey:  c.ServerKey,
	}, true, nil
}

// Set stores a new credential of user for mechanism, replacing an older one.
func (f *CredentialFile) Set(user, mechanism, password string, iterations int) error {
	if user == "" {
		return errors.New("credentials: empty user name")
	}
	cred, err := NewSCRAMCredential(mechanism, user, password, iterations)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return f.update(func(users map[string]map[string]fileCredential) error {
		if users[user] == nil {
			users[user] = map[string]fileCredential{}
		}
		users[user][mechanism] = fileCredential{
			Salt: []byte(cred.Salt), Iterations: cred.Iters,
			StoredKey: cred.StoredKey, ServerKey: cred.ServerKey,
		}
		return nil
	})
}

// Delete removes user's credential for mechanism, or all of the user's
// credentials when mechanism is empty.
func (f *CredentialFile) Delete(user, mechanism string) error {
	return f.update(func(users map[string]map[string]fileCredential) error {
		if _, ok := users[user]; !ok {
			return fmt.Errorf("credentials: no user %q", user)
		}
		if mechanism == "" {
			delete(users, user)
			return nil
		}
		if _, ok := users[user][mechanism]; !ok {
			return fmt.Errorf("credentials: user %q has no %s credential", user, mechanism)
		}
		delete(users[user], mechanism)
		if len(users[user]) == 0 {
			delete(users, user)
		}
		return nil
	})
}

// List returns every user with the mechanisms it has credentials for,
// sorted by name.
func (f *CredentialFile) List() ([]UserMechanisms, error) {
	users, err := f.load()
	if err != nil {
		return nil, err
	}
	out := make([]UserMechanisms, 0, len(users))
	for name, mechs := range users {
		um := UserMechanisms{User: name}
		for m, c := range mechs {
			um.Mechanisms = append(um.Mechanisms, fmt.Sprintf("%s(iterations=%d)", m, c.Iterations))
		}
		slices.Sort(um.Mechanisms)
		out = append(out, um)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out, nil
}

// UserMechanisms is one line of `tributary users list`.
type UserMechanisms struct {
	User       string
	Mechanisms []string
}

// update applies fn to a fresh read of the file and writes the result
// atomically: a temporary file, fsync, rename, fsync of the directory.
func (f *CredentialFile) update(fn func(map[string]map[string]fileCredential) error) error {
	users, err := f.load()
	if err != nil {
		return err
	}
	next := map[string]map[string]fileCredential{}
	for u, ms := range users {
		next[u] = map[string]fileCredential{}
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
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".credentials-*.tmp")
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(data)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), f.path)
		}
		if err != nil {
			return fmt.Errorf("credentials: writing %s: %w", f.path, err)
		}
	} else {
		tmp.Close()
		return fmt.Errorf("credentials: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
