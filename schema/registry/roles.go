package registry

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// RolesFile is the registry's user → role map, a text file of one
// assignment a line:
//
//	# who may do what with the schema registry
//	alice = admin
//	loader = reader
//	ci = writer
//
// Blank lines and lines starting with # are ignored. Roles sit apart from
// the credentials because the credentials are the broker's (a Kafka user
// needs no registry role, and granting one must not touch the broker). The
// file is read again whenever it changes, so a role granted or taken away
// applies to the next request without a restart; while the file does not
// parse, requests fail with 500 and the reason (never with a guess).
type RolesFile struct {
	path string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	roles   map[string]Role
}

// OpenRolesFile reads path once, so that a mistake is reported at start.
func OpenRolesFile(path string) (*RolesFile, error) {
	f := &RolesFile{path: path}
	if _, err := f.load(); err != nil {
		return nil, err
	}
	return f, nil
}

// Role implements Roles.
func (f *RolesFile) Role(user string) (Role, bool, error) {
	roles, err := f.load()
	if err != nil {
		return RoleNone, false, err
	}
	r, ok := roles[user]
	return r, ok, nil
}

func (f *RolesFile) load() (map[string]Role, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.path)
	if err != nil {
		return nil, fmt.Errorf("registry roles: %w", err)
	}
	if f.roles != nil && st.ModTime().Equal(f.modTime) && st.Size() == f.size {
		return f.roles, nil
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("registry roles: %w", err)
	}
	roles, err := ParseRoles(data)
	if err != nil {
		return nil, fmt.Errorf("registry roles %s: %w", f.path, err)
	}
	f.roles, f.modTime, f.size = roles, st.ModTime(), st.Size()
	return roles, nil
}

// ParseRoles reads the text of a roles file.
func ParseRoles(data []byte) (map[string]Role, error) {
	roles := map[string]Role{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, role, ok := strings.Cut(line, "=")
		user = strings.TrimSpace(user)
		if !ok || user == "" {
			return nil, fmt.Errorf("line %d: want `user = role`, got %q", n, line)
		}
		r, err := ParseRole(role)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := roles[user]; dup {
			return nil, fmt.Errorf("line %d: user %q has a role already", n, user)
		}
		roles[user] = r
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(roles) == 0 {
		return nil, errors.New("no user has a role: every request would be refused")
	}
	return roles, nil
}

// StaticRoles is a fixed user → role map, for tests and embedding.
type StaticRoles map[string]Role

// Role implements Roles.
func (s StaticRoles) Role(user string) (Role, bool, error) {
	r, ok := s[user]
	return r, ok, nil
}
