package warehouse_test

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// RenameNoReplace is the loader's commit point: of callers racing for one
// new name exactly one wins, the others get fs.ErrExist and keep their
// file, and the winner's content is whole under the new name.
func TestRenameNoReplace(t *testing.T) {
	eachFS(t, func(t *testing.T, w warehouse.FS) {
		const racers = 4
		for i := range racers {
			if err := warehouse.WriteFile(w, fmt.Sprintf("runs/r%d/M.json", i), []byte(fmt.Sprintf("run %d", i))); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, racers)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = w.RenameNoReplace(fmt.Sprintf("runs/r%d/M.json", i), "commits/000000000001.json")
			}()
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("racers %d and %d both created the name", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, fs.ErrExist):
				t.Fatalf("racer %d: %v, want fs.ErrExist", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no racer created the name")
		}
		if got, err := warehouse.ReadFile(w, "commits/000000000001.json"); err != nil || string(got) != fmt.Sprintf("run %d", winner) {
			t.Fatalf("the name holds %q (%v), want the winner's file", got, err)
		}
		for i := range racers {
			ok, err := warehouse.Exists(w, fmt.Sprintf("runs/r%d/M.json", i))
			if err != nil || ok != (i != winner) {
				t.Errorf("racer %d's file still there: %v (%v), want %v", i, ok, err, i != winner)
			}
		}
		// A missing source is reported as missing, not as a taken name.
		if err := w.RenameNoReplace("runs/none/M.json", "commits/000000000002.json"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("renaming a missing file: %v, want fs.ErrNotExist", err)
		}
	})
}
