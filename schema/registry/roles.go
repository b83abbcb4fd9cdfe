package registry

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
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
// parse, requests fail with 500 and the reason (never with a guess), and
// the registry logs the reason once.
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
	data, err := readRolesFile(f.path)
	if err != nil {
		return nil, err
	}
	roles, err := ParseRoles(data)
	if err != nil {
		return nil, fmt.Errorf("registry roles %s: %w", f.path, err)
	}
	f.roles, f.modTime, f.size = roles, st.ModTime(), st.Size()
	return roles, nil
}

// MaxRolesFile is the largest roles file read (some 50,000 users): the
// file is read again on every change, and a path given by mistake (a log,
// a device) must not fill the registry's memory.
const MaxRolesFile = 1 << 20

// maxRolesLine is the longest line of a roles file.
const maxRolesLine = 64 << 10

func readRolesFile(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("registry roles: %w", err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, MaxRolesFile+1))
	if err != nil {
		return nil, fmt.Errorf("registry roles: %w", err)
	}
	if len(data) > MaxRolesFile {
		return nil, fmt.Errorf("registry roles %s: larger than %d bytes; is it the roles file?", path, MaxRolesFile)
	}
	return data, nil
}

// ParseRoles reads the text of a roles file.
func ParseRoles(data []byte) (map[string]Role, error) {
	roles := map[string]Role{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxRolesLine)
	n := 1
	for ; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, role, ok := strings.Cut(line, "=")
		user = strings.TrimSpace(user)
		if !ok || user == "" {
			return nil, fmt.Errorf("line %d: want `user = role`, got %q", n, quoted(line))
		}
		r, err := ParseRole(role)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q is not a role: use reader, writer or admin", n, quoted(strings.TrimSpace(role)))
		}
		if _, dup := roles[user]; dup {
			return nil, fmt.Errorf("line %d: user %q has a role already", n, quoted(user))
		}
		roles[user] = r
	}
	if err := sc.Err(); err != nil {
		// Scan stopped at line n: the only error reading memory is a line
		// too long, which a line number lets the operator find.
		return nil, fmt.Errorf("line %d: %w (a line holds at most %d bytes)", n, err, maxRolesLine)
	}
	if len(roles) == 0 {
		return nil, errors.New("no user has a role: every request would be refused")
	}
	return roles, nil
}

// quoted shortens a line quoted in an error: a line may be 64 KiB, and
// the error reaches a log line and every refused request.
func quoted(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// StaticRoles is a fixed user → role map, for tests and embedding.
type StaticRoles map[string]Role

// Role implements Roles.
func (s StaticRoles) Role(user string) (Role, bool, error) {
	r, ok := s[user]
	return r, ok, nil
}
