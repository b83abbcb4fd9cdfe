package atomicfile_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Perm gives the replaced file its mode, also when it replaces a file of
// another mode: a file of secrets is never readable by others.
func TestPerm(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(oldContent), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, []byte(newContent), atomicfile.Perm(0o600), atomicfile.UniqueTemp()); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
}

// Writers that replace one file at the same moment with UniqueTemp, as the
// broker and the offline `tributary users` do, all succeed, and the file
// is always one writer's whole content, never a mix; no temporary file is
// left. With the shared name.tmp they trip over each other.
func TestUniqueTempConcurrentWriters(t *testing.T) {
	const writers, rounds = 4, 50
	dir := t.TempDir()
	path := filepath.Join(dir, "shared")
	content := func(w int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("writer %d\n", w)), 4096) }
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := atomicfile.Write(path, content(w), atomicfile.UniqueTemp()); err != nil {
					errs <- err
				}
				got, err := os.ReadFile(path)
				if err != nil {
					errs <- err
					continue
				}
				whole := false
				for v := range writers {
					whole = whole || bytes.Equal(got, content(v))
				}
				if !whole {
					errs <- fmt.Errorf("the file holds %d bytes that are no writer's content", len(got))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// A power loss at any step of a write with a temporary file of its own
// leaves the old content or the new one, as with the shared name.
func TestPowerLossAtEachStepUniqueTemp(t *testing.T) {
	for _, b := range powerLossAtEachStep(t, same, atomicfile.UniqueTemp(), atomicfile.Perm(0o600)) {
		t.Error(b)
	}
}
