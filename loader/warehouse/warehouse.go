// Package warehouse is the file system the loader writes to: a local
// directory (file://), HDFS (hdfs://) or an S3 bucket (s3://), behind one
// small interface.
//
// What a caller may rely on, for every implementation:
//   - Paths are slash-separated and relative to the warehouse root; ".." is
//     refused.
//   - A file written through Create is complete and durable once Close has
//     returned nil (fsync locally; acknowledged by the DataNode pipeline and
//     closed at the NameNode on HDFS). Before that it may be partial.
//   - Rename is atomic: a reader sees the old name or the new one, never a
//     half-moved file (on S3, which has no rename, the new name appears
//     whole in one step, and the old one goes after it). It replaces an existing file at the new name and
//     creates missing parent directories of the new name.
//   - CreateExclusive fails with an error satisfying errors.Is(err,
//     fs.ErrExist) when the name is taken, also when two callers race: this
//     is what locks are built on. RenameNoReplace is its counterpart for a
//     file already written: of callers racing for one new name, one wins
//     and the others get fs.ErrExist; this is what the loader's commit is
//     built on.
//   - Missing files are reported with errors satisfying errors.Is(err,
//     fs.ErrNotExist).
package warehouse

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strings"
	"time"
)

// FS is a warehouse file system rooted at the warehouse URL's path.
type FS interface {
	// Create creates name for writing (replacing a file already there),
	// creating missing parent directories.
	Create(name string) (io.WriteCloser, error)
	// CreateExclusive creates name with data, or fails with fs.ErrExist if
	// it already exists.
	CreateExclusive(name string, data []byte) error
	// Open opens name for reading.
	Open(name string) (io.ReadCloser, error)
	// Rename moves oldname to newname atomically, replacing newname.
	Rename(oldname, newname string) error
	// RenameNoReplace moves oldname to newname atomically, or fails with
	// fs.ErrExist, leaving both alone, if newname exists. On S3 it reads
	// oldname whole: it is meant for small files.
	RenameNoReplace(oldname, newname string) error
	// Remove removes a file or an empty directory; a missing one is not an
	// error.
	Remove(name string) error
	// RemoveAll removes name and everything under it; a missing one is not
	// an error.
	RemoveAll(name string) error
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]fs.FileInfo, error)
	// Stat describes name.
	Stat(name string) (fs.FileInfo, error)
	// MkdirAll creates a directory and its missing parents.
	MkdirAll(name string) error
	// String is the warehouse URL, for messages.
	String() string
	// Close releases connections.
	Close() error
}

// DialTimeout bounds connecting to a remote warehouse, so an unreachable
// one fails a run within seconds instead of hanging.
const DialTimeout = 10 * time.Second

// Options say how to reach a warehouse beyond what its URL says. The zero
// value reads the Hadoop configuration from the environment.
type Options struct {
	HDFS HDFSOptions
	S3   S3Options
}

// HDFSOptions are an HDFS warehouse's cluster configuration and
// credentials; each field left empty takes the value Hadoop's own client
// would.
type HDFSOptions struct {
	// HadoopConf is the directory of core-site.xml and hdfs-site.xml
	// (fs.defaultFS, nameservices, NameNode addresses, security); empty:
	// HADOOP_CONF_DIR, else $HADOOP_HOME/etc/hadoop.
	HadoopConf string `yaml:"hadoop_conf" json:"hadoop_conf,omitempty"`
	// Principal is the Kerberos principal to log in as (user@REALM, the
	// realm defaulting to krb5.conf's default_realm). With Keytab, the
	// login uses its keys; without, the ticket cache must hold its tickets.
	Principal string `yaml:"principal" json:"principal,omitempty"`
	// Keytab is a keytab file holding Principal's keys; empty: the ticket
	// cache (KRB5CCNAME, else /tmp/krb5cc_<uid>) that kinit filled.
	Keytab string `yaml:"keytab" json:"keytab,omitempty"`
	// Krb5Conf is the Kerberos configuration; empty: KRB5_CONFIG, else
	// /etc/krb5.conf.
	Krb5Conf string `yaml:"krb5_conf" json:"krb5_conf,omitempty"`
	// DataTransferProtection is authentication, integrity or privacy, as
	// the DataNodes' dfs.data.transfer.protection requires; empty: the
	// Hadoop configuration's.
	DataTransferProtection string `yaml:"data_transfer_protection" json:"data_transfer_protection,omitempty"`
}

// Open returns the file system a warehouse URL names:
//
//	file:///var/warehouse, /var/warehouse or a relative path  a local directory
//	hdfs://namenode:8020/data                                  HDFS, one NameNode
//	hdfs://prod-ns/data                                        HDFS, the NameNodes of a nameservice of the Hadoop configuration
//	hdfs:///data                                               HDFS, the configuration's fs.defaultFS
//	s3://bucket/prefix                                         an S3 bucket (or an S3-compatible store: Options.S3)
//
// It checks that the warehouse is reachable (and, for a local directory,
// creates it), so that a wrong URL fails here with a clear message.
func Open(rawURL string) (FS, error) { return open(rawURL, Options{}, true) }

// OpenWith is Open with options.
func OpenWith(rawURL string, o Options) (FS, error) { return open(rawURL, o, true) }

// OpenExisting is Open for readers: it creates nothing, and fails with an
// error satisfying errors.Is(err, fs.ErrNotExist) when the warehouse's
// root directory does not exist.
func OpenExisting(rawURL string) (FS, error) { return open(rawURL, Options{}, false) }

// OpenExistingWith is OpenExisting with options.
func OpenExistingWith(rawURL string, o Options) (FS, error) { return open(rawURL, o, false) }

func open(rawURL string, o Options, create bool) (FS, error) {
	if rawURL == "" {
		return nil, errors.New("warehouse: no URL given")
	}
	if !strings.Contains(rawURL, "://") {
		return openLocal(rawURL, create)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("warehouse URL %q: %w", rawURL, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("warehouse URL %q: a file URL has no host (file:///path)", rawURL)
		}
		return openLocal(u.Path, create)
	case "hdfs":
		return openHDFS(u, o.HDFS, create)
	case "s3":
		return openS3(u, o.S3)
	default:
		return nil, fmt.Errorf("warehouse URL %q: scheme %q is not supported (use file://, hdfs:// or s3://)", rawURL, u.Scheme)
	}
}

// clean checks a warehouse-relative path and returns it cleaned.
func clean(name string) (string, error) {
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("warehouse path %q leaves the warehouse", name)
		}
	}
	return strings.TrimPrefix(path.Clean("/"+name), "/"), nil
}

// ReadFile reads a whole file.
func ReadFile(w FS, name string) ([]byte, error) {
	r, err := w.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// WriteFile creates name with data, durable on return.
func WriteFile(w FS, name string, data []byte) error {
	f, err := w.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("%s: writing %s: %w", w, name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: closing %s: %w", w, name, err)
	}
	return nil
}

// Exists reports whether name exists.
func Exists(w FS, name string) (bool, error) {
	_, err := w.Stat(name)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}
