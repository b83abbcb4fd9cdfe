package warehouse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
	"testing"
	"time"
)

// Lock files are read by every process that shares a warehouse, and any of
// them (or a person, or a damaged disk) may have left anything there.
// Reading them must never panic or read without bound, and the names and
// contents that count must be exactly those a holder writes.

func FuzzLockGen(f *testing.F) {
	for _, s := range []string{"000000000001.lock", "000000000042.lock", "1.lock", "-1.lock", "+00000000001.lock",
		"9223372036854775807.lock", "9223372036854775806.lock", "000000000001.lock.1a2b.tmp", ".lock", "x.lock"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		g, ok := lockGen(name)
		if !ok {
			return
		}
		if g < 0 || g == math.MaxInt64 {
			t.Fatalf("%q: generation %d has no successor", name, g)
		}
		if want := fmt.Sprintf("%012d.lock", g); want != name {
			t.Fatalf("%q counts as generation %d, whose file is %q", name, g, want)
		}
	})
}

func FuzzDecodeLockInfo(f *testing.F) {
	info := LockInfo{Name: "topic-x", Holder: "jobs daemon", Host: "h", PID: 7, Token: "0123456789abcdef",
		Acquired: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Expires: time.Date(2026, 1, 2, 3, 5, 5, 0, time.UTC)}
	good, _ := json.Marshal(info)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"token":""}`))
	f.Add([]byte(`{"token":"t","expires":"not a time"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		li, ok := decodeLockInfo(data)
		if !ok {
			return
		}
		if li.Token == "" || len(data) > maxLockFile {
			t.Fatalf("accepted a lock file no holder writes: %+v", li)
		}
		again, err := json.Marshal(li)
		if err != nil {
			t.Fatalf("accepted lock info cannot be written again: %v", err)
		}
		li2, ok := decodeLockInfo(again)
		if !ok {
			t.Fatalf("accepted lock info, written again, is refused: %s", again)
		}
		if third, _ := json.Marshal(li2); !bytes.Equal(third, again) {
			t.Fatalf("lock info reads back differently: %s, then %s", again, third)
		}
	})
}

// Whatever a generation file holds, taking and reading the lock either
// works or says who holds it.
func FuzzLockFile(f *testing.F) {
	live, _ := json.Marshal(LockInfo{Name: "x", Token: "t", Expires: time.Now().Add(time.Hour)})
	f.Add([]byte(nil), "000000000001.lock")
	f.Add(live, "000000000001.lock")
	f.Add([]byte(`{"token":"t","released":true}`), "000000000005.lock")
	f.Add([]byte(`{"token":"t"}`), "9223372036854775807.lock")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." || len(name) > 200 {
			return
		}
		w, err := OpenLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(w, path.Join(LockDir, "x", name), data); err != nil {
			return // a name the file system refuses
		}
		if _, err := ReadLock(w, "x", time.Minute); err != nil {
			t.Fatalf("ReadLock: %v", err)
		}
		l, err := AcquireLock(w, "x", "fuzz", time.Minute)
		var locked *LockedError
		if errors.As(err, &locked) {
			return
		}
		if err != nil {
			t.Fatalf("AcquireLock: %v", err)
		}
		defer l.Release()
		if err := l.Check(); err != nil {
			t.Fatalf("lock taken, then: %v", err)
		}
	})
}

// A stray generation file at the top of int64 made the next holder's
// generation overflow to a negative one, so it found itself "taken over"
// at once; odd names like "+7.lock" counted as generations too.
func TestStrayGenerationFiles(t *testing.T) {
	for _, stray := range []string{"9223372036854775807.lock", "+00000000009.lock", "-1.lock", "7.lock"} {
		t.Run(stray, func(t *testing.T) {
			w, err := OpenLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			released, _ := json.Marshal(LockInfo{Name: "x", Token: "t", Released: true})
			if err := WriteFile(w, path.Join(LockDir, "x", stray), released); err != nil {
				t.Fatal(err)
			}
			l, err := AcquireLock(w, "x", "test", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			if err := l.Check(); err != nil {
				t.Fatalf("lock just taken: %v", err)
			}
			var locked *LockedError
			if _, err := AcquireLock(w, "x", "other", time.Minute); !errors.As(err, &locked) {
				t.Fatalf("a second holder: %v, want a LockedError", err)
			}
		})
	}
}
