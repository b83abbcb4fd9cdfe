package audit

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// WAL is an audited producer's write-ahead log of its counts (`tributary
// produce --audit-wal DIR`, and the mirror's with `tributary mirror
// --audit --audit-wal DIR`), so that a producer killed at any point
// neither loses nor double-counts what it sent:
//
//   - Before a record is handed to the client, an intent naming it (a
//     hash of its value and headers, its topic, window and server) is
//     written. When the record is acknowledged, the intent becomes a
//     count. A producer killed between the two leaves the intent; the next
//     one looks for the record in the brokers (from the intent's time on,
//     by that hash) and counts it if it is there: a record the brokers
//     hold is counted whether or not its acknowledgement arrived.
//   - Before monitoring events are sent, what they say is written (and
//     the file fsynced); their ids derive from the WAL's publisher name
//     and their sequence numbers (EventID), which continue across
//     restarts. A producer killed during a publish leaves them in the WAL;
//     the next one sends the same events again, which the reconciler
//     counts once.
//
// A WAL is one directory, used by one process at a time (a lock file).
// It holds one file, wal-N.log, of frames [len][crc32c][type][payload];
// the first frame is a checkpoint of the whole state, and the file is
// replaced by a new checkpoint once it grows past walRotateBytes.
// Anything that cannot be read (a bad checksum, a torn or cut frame, an
// unknown record) stops the producer with the file named: skipping a
// record could publish counts twice.
type WAL struct {
	dir  string
	lock *os.File
	log  *slog.Logger

	// The rest is used under the lock of the one Publisher the WAL
	// belongs to.
	f      *os.File
	path   string
	gen    uint64
	size   int64
	buf    []byte
	err    error // the first write failure: the WAL takes nothing after it
	st     *walState
	opened time.Time // intents left by earlier processes are doubtful from here

	fault func(point string)
}

// WALOptions configures OpenWAL.
type WALOptions struct {
	// Host names the WAL's publisher when the WAL is created
	// ("wal/<host>/<random>"). Default: the host name.
	Host string
	// Logger receives what recovery finds. Default: slog.Default().
	Logger *slog.Logger
	// Fault, when set, is called at the named points of the publish and
	// acknowledgement paths (WALFaultPoints), so a test can kill the
	// process exactly there.
	Fault func(point string)
}

// WALFaultPoints are the points WALOptions.Fault is called at:
// "acked" (a record was acknowledged, its count not yet written),
// "built" (monitoring events written to the WAL, not yet sent) and
// "sent" (monitoring events acknowledged, not yet marked so in the WAL).
var WALFaultPoints = []string{"acked", "built", "sent"}

// walRotateBytes is the size past which the WAL file is replaced by a
// checkpoint: intents and acknowledgements make it grow by about 80 bytes
// an event.
var walRotateBytes int64 = 4 << 20

// walMaxFrame bounds one frame, so a damaged length cannot make recovery
// allocate what it claims.
const walMaxFrame = 256 << 20

// Record types.
const (
	recCheckpoint = 'K' // the whole state, JSON
	recIntent     = 'I' // a record about to be sent
	recAcks       = 'A' // intents acknowledged (or found in the brokers): counted
	recDrops      = 'D' // intents that failed, or were not found: not counted
	recCount      = 'C' // a count made directly (Publisher.Count on a WAL publisher)
	recBuilt      = 'B' // monitoring events built from the counts, JSON
	recPublished  = 'P' // monitoring events acknowledged
)

var walCRC = crc32.MakeTable(crc32.Castagnoli)

// OpenWAL opens the WAL in dir, creating it if needed, and reads back
// what an earlier process left there. It fails, naming the file and what
// to do, when the WAL is damaged or in use by another process.
func OpenWAL(dir string, o WALOptions) (*WAL, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("audit WAL: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("audit WAL: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("audit WAL %s is in use by another process (two producers sharing one WAL would publish each other's counts): give each producer its own --audit-wal directory", dir)
	}
	w := &WAL{dir: dir, lock: lock, log: o.Logger, fault: o.Fault, opened: time.Now()}
	if err := w.open(o.Host); err != nil {
		lock.Close()
		return nil, err
	}
	return w, nil
}

// open reads the newest WAL file, or starts a new WAL.
func (w *WAL) open(host string) error {
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("audit WAL: %w", err)
	}
	var gens []uint64
	for _, e := range ents {
		var g uint64
		if n, _ := fmt.Sscanf(e.Name(), "wal-%d.log", &g); n == 1 && e.Name() == walName(g) {
			gens = append(gens, g)
		}
	}
	slices.Sort(gens)
	if len(gens) == 0 {
		var r [6]byte
		rand.Read(r[:])
		w.st = newWALState("wal/" + host + "/" + hex.EncodeToString(r[:]))
		return w.rotate()
	}
	w.gen = gens[len(gens)-1]
	w.path = filepath.Join(w.dir, walName(w.gen))
	st, size, err := replayWAL(w.path)
	if err != nil {
		return err
	}
	w.st, w.size = st, size
	// Older files are what a rotation had replaced before a crash: the
	// newest one's checkpoint holds everything they said.
	for _, g := range gens[:len(gens)-1] {
		os.Remove(filepath.Join(w.dir, walName(g)))
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			os.Remove(filepath.Join(w.dir, e.Name()))
		}
	}
	w.f, err = os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("audit WAL: %w", err)
	}
	return nil
}

func walName(gen uint64) string { return fmt.Sprintf("wal-%d.log", gen) }

// damaged is the error for a WAL file that cannot be read back.
func damaged(path string, at int64, what string) error {
	return fmt.Errorf("audit WAL %s is damaged at byte %d (%s): the counts it holds cannot be read back, and skipping a record could publish counts twice. "+
		"Move its directory aside and start with a new --audit-wal directory: what it had not published is then reported as producer-incomplete, never as data missing",
		path, at, what)
}

// replayWAL reads a WAL file back into the state it describes.
func replayWAL(path string) (*walState, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("audit WAL: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("audit WAL: %w", err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var st *walState
	var at int64
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				break
			}
			return nil, 0, damaged(path, at, "the file ends inside a frame header: it was cut short")
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		// Checked before allocating: a damaged length must not make us
		// allocate what it claims.
		if left := fi.Size() - at - 8; n == 0 || n > walMaxFrame || int64(n) > left {
			return nil, 0, damaged(path, at, fmt.Sprintf("a frame claims %d bytes, %d are left: it was cut short or its length is damaged", n, max(left, 0)))
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, 0, damaged(path, at, fmt.Sprintf("the file ends inside a frame of %d bytes: it was cut short", n))
		}
		if crc32.Checksum(body, walCRC) != binary.BigEndian.Uint32(hdr[4:]) {
			return nil, 0, damaged(path, at, "checksum mismatch")
		}
		if (st == nil) != (body[0] == recCheckpoint) {
			return nil, 0, damaged(path, at, "the first frame must be a checkpoint, and only the first")
		}
		if err := replayRecord(&st, body[0], body[1:]); err != nil {
			return nil, 0, damaged(path, at, err.Error())
		}
		at += 8 + int64(n)
	}
	if st == nil {
		return nil, 0, damaged(path, 0, "the file is empty: it was cut short")
	}
	return st, at, nil
}

// append writes one frame. Called with w.mu held.
func (w *WAL) append(typ byte, payload []byte) error {
	if w.err != nil {
		return w.err
	}
	w.buf = frame(w.buf[:0], typ, payload)
	if _, err := w.f.Write(w.buf); err != nil {
		w.err = fmt.Errorf("audit WAL %s: %w (nothing more is counted through it; restart the producer once the disk is fixed)", w.path, err)
		return w.err
	}
	w.size += int64(len(w.buf))
	return nil
}

func frame(dst []byte, typ byte, payload []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(1+len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = append(dst, typ)
	dst = append(dst, payload...)
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start+8:], walCRC))
	return dst
}

// sync makes what was written survive a power loss. Called with w.mu held.
func (w *WAL) sync() error {
	if w.err != nil {
		return w.err
	}
	if err := w.f.Sync(); err != nil {
		w.err = fmt.Errorf("audit WAL %s: fsync: %w", w.path, err)
	}
	return w.err
}

// rotate replaces the WAL file with a new one holding a checkpoint of the
// state: written beside it, fsynced and renamed in (atomicfile), so a
// crash leaves either file complete. Called with w.mu held.
func (w *WAL) rotate() error {
	if w.err != nil {
		return w.err
	}
	cp, err := w.st.checkpoint()
	if err != nil {
		return fmt.Errorf("audit WAL: checkpoint: %w", err)
	}
	data := frame(nil, recCheckpoint, cp)
	path := filepath.Join(w.dir, walName(w.gen+1))
	if err := atomicfile.Write(path, data); err != nil {
		return fmt.Errorf("audit WAL: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("audit WAL: %w", err)
	}
	if w.f != nil {
		w.f.Close()
		os.Remove(w.path)
	}
	w.f, w.path, w.size = f, path, int64(len(data))
	w.gen++
	return nil
}

// Close closes the WAL and lets another process open it.
func (w *WAL) Close() error {
	var err error
	if w.f != nil {
		err = w.f.Sync()
		if cerr := w.f.Close(); err == nil {
			err = cerr
		}
		w.f = nil
	}
	w.lock.Close()
	if w.err == nil {
		w.err = errors.New("audit WAL: closed")
	}
	return err
}

// Dir returns the WAL's directory.
func (w *WAL) Dir() string { return w.dir }

// Name returns the publisher name the WAL's monitoring events carry; it
// stays the same across restarts.
func (w *WAL) Name() string { return w.st.Name }

func (w *WAL) pause(point string) {
	if w.fault != nil {
		w.fault(point)
	}
}
