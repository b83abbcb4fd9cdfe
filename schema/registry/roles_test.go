package registry_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/schema/registry"
)

// What FuzzParseRoles and a look at the file's path found: a long line
// was refused without saying which, a long bad role was quoted whole into
// every refused request, and a path that is not a roles file (a log, a
// device) was read whole into memory.
func TestRolesFileErrorsNameTheFileAndLine(t *testing.T) {
	write := func(text string) string {
		path := filepath.Join(t.TempDir(), "roles")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"unknown role", "alice = admin\nbob = root\n", []string{"line 2", `"root" is not a role`}},
		{"line too long", "alice = admin\n" + strings.Repeat("b", 70000) + " = reader\n", []string{"line 2", "at most 65536 bytes"}},
		{"long bad role", "alice = " + strings.Repeat("r", 10000) + "\n", []string{"line 1", "is not a role"}},
		{"larger than a roles file", "alice = admin\n" + strings.Repeat("# padding\n", registry.MaxRolesFile/10), []string{"larger than"}},
	} {
		path := write(tc.text)
		_, err := registry.OpenRolesFile(path)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, path) || len(msg) > 300+len(path) {
			t.Errorf("%s: error does not name %s, or is %d bytes long: %.300s", tc.name, path, len(msg), msg)
		}
		for _, want := range tc.want {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %.300q does not say %q", tc.name, msg, want)
			}
		}
	}
	if _, err := registry.OpenRolesFile(write("alice = admin\n" + strings.Repeat("# padding\n", registry.MaxRolesFile/10-2))); err != nil {
		t.Errorf("roles file just under the limit: %v", err)
	}
}
