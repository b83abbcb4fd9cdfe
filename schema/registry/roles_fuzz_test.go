package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The roles file is written by hand, so anything may be in it: the parser
// must never panic, and what it accepts must be a map the file format can
// say. Every user is a name a line can hold (not empty, no `=`, no line
// break, no space at either end, not a comment), every role one of the
// three; writing the map out again, a line per user, parses to the same
// map.
func FuzzParseRoles(f *testing.F) {
	for _, seed := range []string{
		"# who may do what\nalice = admin\nloader = reader\nci = writer\n",
		"alice=ADMIN", "alice = admin\r\nbob = reader\r\n", "  alice  =  writer  ",
		"a = reader\na = admin\n", "alice admin\n", "= reader\n", "alice =\n", "alice = root\n",
		"alice = admin = reader\n", "a=b=admin\n", "# nobody\n", "", "\n\n\n", "#x = admin\n",
		"a b = admin\n", "\xff\xfe = admin\n", "al\x00ice = admin\n", "\u00a0alice\u00a0 = admin\n",
		"alice\u2028 = admin\n", "alice = admin\x85", "alice = \u00a0reader",
		strings.Repeat("a", 70000) + " = admin\n", "alice = admin\n#" + strings.Repeat("x", 70000),
		strings.Repeat("u = reader\n", 1000),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		roles, err := ParseRoles(data)
		if err != nil {
			if roles != nil {
				t.Fatalf("error %v with roles %v", err, roles)
			}
			// The quoted part is at most 64 bytes, each escaped in up to
			// four (\x9d).
			if msg := err.Error(); len(msg) > 400 || !strings.HasPrefix(msg, "line ") && !strings.HasPrefix(msg, "no user") {
				t.Fatalf("error names no line or is too long to read (%d bytes): %.400s", len(msg), msg)
			}
			return
		}
		if len(roles) == 0 {
			t.Fatal("accepted a file that gives no user a role")
		}
		var file strings.Builder
		for _, user := range slices.Sorted(maps.Keys(roles)) {
			role := roles[user]
			if user == "" || strings.ContainsAny(user, "=\n") || strings.HasPrefix(user, "#") ||
				strings.TrimFunc(user, unicode.IsSpace) != user {
				t.Fatalf("accepted user %q", user)
			}
			if role < RoleReader || role > RoleAdmin {
				t.Fatalf("user %q: accepted role %d", user, role)
			}
			fmt.Fprintf(&file, "%s = %s\n", user, role)
		}
		again, err := ParseRoles([]byte(file.String()))
		if err != nil || !maps.Equal(roles, again) {
			t.Fatalf("roles %v, written as\n%s\nread back as %v, %v", roles, file.String(), again, err)
		}
	})
}
