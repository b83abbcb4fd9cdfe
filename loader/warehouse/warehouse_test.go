package warehouse_test

import (
	"errors"
	"io/fs"
	"slices"
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// eachFS runs a test against a local warehouse, one in a real HDFS and
// one in a real S3-compatible store.
func eachFS(t *testing.T, test func(t *testing.T, w warehouse.FS)) {
	t.Run("local", func(t *testing.T) {
		w, err := warehouse.Open("file://" + t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		test(t, w)
	})
	t.Run("hdfs", func(t *testing.T) {
		testenv.Needs(t, testenv.HDFS, testenv.JVM)
		w, err := warehouse.Open(testenv.HDFSWarehouse(t))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		test(t, w)
	})
	t.Run("s3", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts an S3-compatible server; skipped with -short")
		}
		w, err := warehouse.Open(testenv.S3Warehouse(t))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		test(t, w)
	})
}

func TestFileOperations(t *testing.T) {
	eachFS(t, func(t *testing.T, w warehouse.FS) {
		if err := warehouse.WriteFile(w, "a/b/c.txt", []byte("one")); err != nil {
			t.Fatal(err)
		}
		if got, err := warehouse.ReadFile(w, "a/b/c.txt"); err != nil || string(got) != "one" {
			t.Fatalf("read back %q, %v", got, err)
		}
		// Rename creates the new parent and replaces the target.
		if err := warehouse.WriteFile(w, "x/y/d.txt", []byte("old")); err != nil {
			t.Fatal(err)
		}
		if err := w.Rename("a/b/c.txt", "x/y/d.txt"); err != nil {
			t.Fatal(err)
		}
		if got, _ := warehouse.ReadFile(w, "x/y/d.txt"); string(got) != "one" {
			t.Fatalf("after rename over: %q", got)
		}
		if err := w.Rename("a/b/c.txt", "new/dir/e.txt"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("renaming a missing file: %v, want ErrNotExist", err)
		}
		if err := w.Rename("x/y/d.txt", "new/dir/e.txt"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := warehouse.Exists(w, "x/y/d.txt"); ok {
			t.Fatal("the old name still exists after rename")
		}
		// CreateExclusive.
		if err := w.CreateExclusive("locks/l", []byte("1")); err != nil {
			t.Fatal(err)
		}
		if err := w.CreateExclusive("locks/l", []byte("2")); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("second CreateExclusive: %v, want ErrExist", err)
		}
		// ReadDir is sorted; missing things.
		for _, n := range []string{"d/3", "d/1", "d/2"} {
			if err := warehouse.WriteFile(w, n, nil); err != nil {
				t.Fatal(err)
			}
		}
		infos, err := w.ReadDir("d")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, fi := range infos {
			names = append(names, fi.Name())
		}
		if !slices.Equal(names, []string{"1", "2", "3"}) {
			t.Fatalf("ReadDir: %v", names)
		}
		if _, err := w.ReadDir("nope"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ReadDir of a missing directory: %v", err)
		}
		if _, err := w.Stat("nope"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat of a missing file: %v", err)
		}
		if err := w.Remove("nope"); err != nil {
			t.Fatalf("Remove of a missing file: %v", err)
		}
		if err := w.RemoveAll("d"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := warehouse.Exists(w, "d/1"); ok {
			t.Fatal("RemoveAll left files")
		}
		if _, err := w.Open("../escape"); err == nil {
			t.Fatal("a path with .. was accepted")
		}
	})
}
