package partition

import (
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/log"
)

// A partition that cannot write (a full disk, a file size limit, an I/O
// error) answers every produce with KAFKA_STORAGE_ERROR. The operator needs
// to hear of it once, with the partition and the free space, not once per
// request, and to hear when it writes again: storageFaults remembers which
// partitions are failing.
type storageFaults struct {
	failing atomic.Int32 // len(dirs), read on every successful append
	mu      sync.Mutex
	dirs    map[string]bool
}

// StorageError maps a storage error to the Kafka error code the client
// gets, and logs the first storage error of a partition that was writing.
func (ps *Table) StorageError(l *log.Log, err error) int16 {
	code := kafkaerr.OfStorage(err)
	if code != kerr.KafkaStorageError.Code {
		return code
	}
	f := &ps.faults
	dir := l.Dir()
	f.mu.Lock()
	first := !f.dirs[dir]
	if first {
		if f.dirs == nil {
			f.dirs = map[string]bool{}
		}
		f.dirs[dir] = true
		f.failing.Add(1)
	}
	f.mu.Unlock()
	if first {
		ps.logger.Error("partition cannot write: "+storageFaultKind(err), partitionAttrs(dir, err)...)
	}
	return code
}

// StorageWritten notes the outcome (a Kafka error code) of appending to l:
// after a success, a partition that was failing writes again, which is
// logged once.
func (ps *Table) StorageWritten(l *log.Log, code int16) {
	f := &ps.faults
	if code != 0 || f.failing.Load() == 0 {
		return
	}
	dir := l.Dir()
	f.mu.Lock()
	was := f.dirs[dir]
	if was {
		delete(f.dirs, dir)
		f.failing.Add(-1)
	}
	f.mu.Unlock()
	if was {
		ps.logger.Info("partition writes again", partitionAttrs(dir, nil)...)
	}
}

func storageFaultKind(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "disk full"
	case errors.Is(err, syscall.EFBIG):
		return "file size limit reached"
	}
	return "storage error"
}

// partitionAttrs names the partition of a log directory and the free space
// of its file system.
func partitionAttrs(dir string, err error) []any {
	var attrs []any
	if topic, p, ok := ParseDir(filepath.Base(dir)); ok {
		attrs = append(attrs, "topic", topic, "partition", p)
	}
	attrs = append(attrs, "dir", dir)
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil {
		attrs = append(attrs, "free_bytes", st.Bavail*uint64(st.Bsize))
	}
	if err != nil {
		attrs = append(attrs, slog.Any("err", err))
	}
	return attrs
}
