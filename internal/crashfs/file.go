package crashfs

// File: what FS hands out for a file, writing through to the real file and
// telling FS when its content becomes durable (Sync).

import "os"

// File is a file opened through FS.
type File struct {
	fs   *FS
	f    *os.File
	name string // as opened, for its kind
}

func (w *File) Read(p []byte) (int, error) {
	if err := w.fs.alive(); err != nil {
		return 0, err
	}
	return w.f.Read(p)
}

func (w *File) ReadAt(p []byte, off int64) (int, error) {
	if err := w.fs.alive(); err != nil {
		return 0, err
	}
	return w.f.ReadAt(p, off)
}

func (w *File) Write(p []byte) (int, error) {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	if err := w.fs.step(); err != nil {
		return 0, err
	}
	return w.f.Write(p)
}

func (w *File) WriteAt(p []byte, off int64) (int, error) {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	if err := w.fs.step(); err != nil {
		return 0, err
	}
	return w.f.WriteAt(p, off)
}

// Truncate changes the size; like a write, it is durable only once synced.
func (w *File) Truncate(size int64) error {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	if err := w.fs.step(); err != nil {
		return err
	}
	return w.f.Truncate(size)
}

func (w *File) Sync() error {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	return w.fs.around(w.fs.kindOf(w.name)+"-sync", func() error {
		fi, err := w.f.Stat()
		if err != nil {
			return err
		}
		data := make([]byte, fi.Size())
		if _, err := w.f.ReadAt(data, 0); err != nil {
			return err
		}
		w.fs.nodeFor(fi).data = data
		return nil
	})
}

// Close always releases the descriptor; after a power loss it reports it.
func (w *File) Close() error {
	err := w.f.Close()
	if aerr := w.fs.alive(); aerr != nil {
		return aerr
	}
	return err
}
