package warehouse

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Local is a warehouse in a local directory. Files are fsynced on Close and
// directories after a rename, so a committed run survives a power loss, not
// only a killed process.
type Local struct {
	root string
}

// OpenLocal returns the warehouse in dir, creating dir if needed.
func OpenLocal(dir string) (*Local, error) { return openLocal(dir, true) }

func openLocal(dir string, create bool) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: %w", dir, err)
	}
	if !create {
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("warehouse file://%s: %w", abs, err)
		}
		return &Local{root: abs}, nil
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("warehouse file://%s is not usable: %w", abs, err)
	}
	return &Local{root: abs}, nil
}

func (l *Local) String() string { return "file://" + l.root }

// Root is the directory the warehouse lives in.
func (l *Local) Root() string { return l.root }

func (l *Local) Close() error { return nil }

func (l *Local) path(name string) (string, error) {
	c, err := clean(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(l.root, filepath.FromSlash(c)), nil
}

type syncFile struct{ *os.File }

// Close fsyncs before closing: Close returning nil is the durability point.
func (f syncFile) Close() error {
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

func (l *Local) Create(name string) (io.WriteCloser, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	return syncFile{f}, nil
}

func (l *Local) CreateExclusive(name string, data []byte) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return syncFile{f}.Close()
}

func (l *Local) Open(name string) (io.ReadCloser, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

func (l *Local) Rename(oldname, newname string) error {
	op, err := l.path(oldname)
	if err != nil {
		return err
	}
	np, err := l.path(newname)
	if err != nil {
		return err
	}
	dir := filepath.Dir(np)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Rename(op, np); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (l *Local) Remove(name string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (l *Local) RemoveAll(name string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if p == l.root {
		return errors.New("warehouse: refusing to remove the warehouse root")
	}
	return os.RemoveAll(p)
}

func (l *Local) ReadDir(name string) ([]fs.FileInfo, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (l *Local) Stat(name string) (fs.FileInfo, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}

func (l *Local) MkdirAll(name string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	return os.MkdirAll(p, 0o755)
}
