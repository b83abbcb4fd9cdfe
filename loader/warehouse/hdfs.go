package warehouse

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/user"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// HDFS is a warehouse in HDFS, reached through the NameNode's RPC protocol
// (github.com/colinmarc/hdfs/v2); no Hadoop installation is needed, only
// its client configuration for nameservices and Kerberos (HDFSOptions).
//
// With simple authentication the user is the URL's user
// (hdfs://etl@namenode:8020/data), else HADOOP_USER_NAME, else the
// current user: the same rule as Hadoop's own client. With Kerberos it is
// the principal's.
//
// High availability: the client tries the nameservice's NameNodes in turn
// and follows a failover by itself; while none is active (a failover in
// progress), namespace calls, a file's first block and its completion are
// retried for up to FailoverWait (a single NameNode is not waited for).
// When the active NameNode dies under a call, reads, mkdir, delete and
// Create (which replaces) are repeated on the other one; a rename, an
// exclusive create or a block write cut that way, or a failover while a
// block is being written, may fail the write: the run fails and commits
// nothing, and the next run loads the same records.
type HDFS struct {
	client *hdfs.Client
	root   string // absolute path in HDFS
	url    string
	wait   time.Duration // for an active NameNode: FailoverWait with several, else 0
}

// FailoverWait bounds how long calls wait for an active NameNode: a
// failover takes seconds; longer means the cluster is down.
var FailoverWait = 30 * time.Second

func openHDFS(u *url.URL, o HDFSOptions, create bool) (*HDFS, error) {
	if err := CheckDataTransferProtection(o.DataTransferProtection); err != nil {
		return nil, fmt.Errorf("warehouse %s: %w", u.Redacted(), err)
	}
	conf, err := loadHadoopConf(o.HadoopConf)
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: %w", u.Redacted(), err)
	}
	authority := u.Host
	if authority == "" {
		if authority, err = conf.defaultFS(); err != nil {
			return nil, fmt.Errorf("warehouse %s: %w", u.Redacted(), err)
		}
	}
	addrs, err := conf.namenodes(authority)
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: %w", u.Redacted(), err)
	}
	root := path.Clean("/" + u.Path)
	where := "hdfs://" + authority + root
	opts := hdfs.ClientOptionsFromConf(conf.props) // data transfer settings
	opts.Addresses = addrs
	if o.DataTransferProtection != "" {
		opts.DataTransferProtection = o.DataTransferProtection
	}
	if opts.KerberosClient, err = kerberosLogin(o, conf); err != nil {
		return nil, fmt.Errorf("warehouse %s: %w", where, err)
	}
	if opts.KerberosClient != nil {
		if opts.KerberosServicePrincipleName == "" {
			return nil, fmt.Errorf("warehouse %s: Kerberos needs the NameNodes' principal: %s sets no dfs.namenode.kerberos.principal (e.g. nn/_HOST@REALM)", where, conf.where())
		}
	} else {
		if opts.User = u.User.Username(); opts.User == "" {
			opts.User = os.Getenv("HADOOP_USER_NAME")
		}
		if opts.User == "" {
			cur, err := user.Current()
			if err != nil {
				return nil, fmt.Errorf("warehouse %s: no user name: %w", where, err)
			}
			opts.User = cur.Username
		}
	}
	dialer := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}
	opts.NamenodeDialFunc = dialer.DialContext
	opts.DatanodeDialFunc = dialer.DialContext
	nns := strings.Join(addrs, ", ")
	var client *hdfs.Client
	// Only a nameservice has another NameNode to wait for; a single one
	// that cannot be reached fails the run at once.
	wait := time.Duration(0)
	if len(addrs) > 1 {
		wait = FailoverWait
	}
	err = retryFailover(wait, func() (err error) { client, err = hdfs.NewClient(opts); return err })
	if err != nil {
		if len(addrs) == 1 && !strings.Contains(authority, ":") && strings.Contains(err.Error(), "no such host") {
			// Most likely a nameservice whose configuration was not found.
			return nil, fmt.Errorf("warehouse %s: no host %s, and it is not a nameservice of %s: %w", where, authority, conf.where(), err)
		}
		if loginRefused(err) {
			return nil, fmt.Errorf("warehouse %s: the Kerberos login to the NameNode at %s failed (check the principal's tickets with klist, and dfs.namenode.kerberos.principal in %s): %w", where, nns, conf.where(), err)
		}
		return nil, fmt.Errorf("warehouse %s: cannot reach the HDFS NameNode at %s: %w", where, nns, err)
	}
	h := &HDFS{client: client, root: root, url: where, wait: wait}
	// The first NameNode call is where an unreachable or wrong address,
	// or refused credentials, show.
	if !create {
		if _, err := h.stat(root); err != nil {
			client.Close()
			return nil, fmt.Errorf("warehouse %s: %w", h.url, err)
		}
		return h, nil
	}
	if err := h.mkdirAll(root); err != nil {
		client.Close()
		return nil, fmt.Errorf("warehouse %s: cannot use %s on the HDFS NameNode at %s: %w", h.url, root, nns, err)
	}
	return h, nil
}

// notCarriedOut tells the errors of a call no NameNode carried out, which
// may be sent again whatever the call: the client found every NameNode it
// knows down, standby, or failed within the last few seconds; or the
// active NameNode refused the call for now with a RetriableException, as
// it does while it leaves safe mode after a failover or restart (Hadoop's
// own client retries those too).
func notCarriedOut(err error) bool {
	if err == nil || loginRefused(err) {
		return false
	}
	var remote hdfs.Error
	if errors.As(err, &remote) && remote.Exception() == retriableException {
		return true
	}
	return strings.Contains(err.Error(), "no available namenodes")
}

// retriableException is the class of a NameNode's "not now, try again".
const retriableException = "org.apache.hadoop.ipc.RetriableException"

// loginRefused tells the client's error when the NameNodes refused the
// Kerberos login: no failover ends that.
func loginRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "SASL handshake")
}

// retryFailover calls f until it returns something other than a call not
// carried out, for up to wait. Retrying is safe even for calls that are not
// idempotent (create, rename): the client returns "no available namenodes"
// only when it found no NameNode to send the call to, a NameNode throws a
// RetriableException before it acts, and a StandbyException (a call
// refused by a standby) the client retries by itself. A call cut off after
// it was sent fails with another error, not retried.
func retryFailover(wait time.Duration, f func() error) error {
	return retry(wait, notCarriedOut, f)
}

// retryIdempotent is retryFailover for calls that may also be repeated
// after a NameNode died under them (the connection cut, the call maybe
// carried out): reads, and mkdir and delete, whose repetition does nothing
// more.
func retryIdempotent(wait time.Duration, f func() error) error {
	return retry(wait, func(err error) bool { return notCarriedOut(err) || connectionCut(err) }, f)
}

// connectionCut tells an error of a connection its NameNode closed or
// reset, as when the NameNode process dies.
func connectionCut(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

func retry(wait time.Duration, retriable func(error) bool, f func() error) error {
	deadline := time.Now().Add(wait)
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		err := f()
		if err == nil || !retriable(err) {
			return err
		}
		if time.Now().After(deadline) {
			if wait > 0 {
				err = fmt.Errorf("%w (no NameNode became active within %v)", err, wait)
			}
			return err
		}
		time.Sleep(pause)
	}
}

func (h *HDFS) stat(p string) (fi fs.FileInfo, err error) {
	err = retryIdempotent(h.wait, func() error { fi, err = h.client.Stat(p); return err })
	return fi, err
}

func (h *HDFS) mkdirAll(p string) error {
	return retryIdempotent(h.wait, func() error { return h.client.MkdirAll(p, 0o755) })
}

func (h *HDFS) remove(p string) error {
	return retryIdempotent(h.wait, func() error { return h.client.Remove(p) })
}

func (h *HDFS) create(p string) (f hdfsFile, err error) {
	var w *hdfs.FileWriter
	err = retryFailover(h.wait, func() error { w, err = h.client.Create(p); return err })
	return hdfsFile{w, new(bool), h.wait}, err
}

func (h *HDFS) String() string { return h.url }

// Client is the underlying HDFS client, for tests and tools.
func (h *HDFS) Client() *hdfs.Client { return h.client }

func (h *HDFS) Close() error { return h.client.Close() }

func (h *HDFS) path(name string) (string, error) {
	c, err := clean(name)
	if err != nil {
		return "", err
	}
	return path.Join(h.root, c), nil
}

func (h *HDFS) Create(name string) (io.WriteCloser, error) {
	p, err := h.path(name)
	if err != nil {
		return nil, err
	}
	if err := h.mkdirAll(path.Dir(p)); err != nil {
		return nil, err
	}
	// Create replaces what is there, so a create cut off with its
	// NameNode, carried out or not, is done again from the remove.
	var f hdfsFile
	err = retryIdempotent(h.wait, func() error {
		if err := h.remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		f, err = h.create(p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// hdfsFile retries Close while the NameNode has not yet heard from the
// DataNodes that the last block is stored: the data is acknowledged, but
// the file is complete (and durable) only once Close returns nil. Hadoop's
// own client retries the same way. It also retries, for up to
// FailoverWait, the allocation of the first block and the completion
// while no NameNode is active: nothing of the file is in flight then.
//
// An empty Write is dropped: the client would allocate a block for it that
// no DataNode ever receives, and the file could never be completed.
type hdfsFile struct {
	*hdfs.FileWriter
	started *bool         // a block was allocated
	wait    time.Duration // HDFS.wait
}

func (f hdfsFile) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if *f.started {
		return f.FileWriter.Write(p)
	}
	var n int
	err := retryFailover(f.wait, func() (err error) {
		// Before its first block the writer sends nothing but the
		// allocation, so a failed one leaves nothing behind to resend.
		n, err = f.FileWriter.Write(p)
		if n > 0 || !notCarriedOut(err) {
			*f.started = true
		}
		return err
	})
	return n, err
}

func (f hdfsFile) Close() error {
	var err error
	retryErr := retryFailover(f.wait, func() error { err = f.FileWriter.Close(); return err })
	if notCarriedOut(err) {
		return retryErr
	}
	for wait := 10 * time.Millisecond; hdfs.IsErrReplicating(err); wait *= 2 {
		if wait > 5*time.Second {
			return fmt.Errorf("%w (the NameNode did not confirm the file's last block)", err)
		}
		time.Sleep(wait)
		err = f.FileWriter.Close()
	}
	return err
}

// CreateExclusive relies on the NameNode refusing to create a file that
// exists (create without the OVERWRITE flag), which is atomic there.
func (h *HDFS) CreateExclusive(name string, data []byte) error {
	p, err := h.path(name)
	if err != nil {
		return err
	}
	if err := h.mkdirAll(path.Dir(p)); err != nil {
		return err
	}
	hf, err := h.create(p)
	if err != nil {
		return err
	}
	if _, err := hf.Write(data); err != nil {
		hf.Close()
		return err
	}
	return hf.Close()
}

func (h *HDFS) Open(name string) (io.ReadCloser, error) {
	p, err := h.path(name)
	if err != nil {
		return nil, err
	}
	var f *hdfs.FileReader
	err = retryIdempotent(h.wait, func() (err error) { f, err = h.client.Open(p); return err })
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Rename uses the NameNode's rename2 with OVERWRITE: one atomic namespace
// operation.
func (h *HDFS) Rename(oldname, newname string) error {
	op, err := h.path(oldname)
	if err != nil {
		return err
	}
	np, err := h.path(newname)
	if err != nil {
		return err
	}
	if err := h.mkdirAll(path.Dir(np)); err != nil {
		return err
	}
	return retryFailover(h.wait, func() error { return h.client.Rename(op, np) })
}

// RenameNoReplace is a rename2 without OVERWRITE, decided atomically by
// the NameNode. Like Rename it is not repeated after a failover cut it
// short: the caller cannot tell whether it happened (the loader's commit
// then reads the new name back).
func (h *HDFS) RenameNoReplace(oldname, newname string) error {
	op, err := h.path(oldname)
	if err != nil {
		return err
	}
	np, err := h.path(newname)
	if err != nil {
		return err
	}
	if err := h.mkdirAll(path.Dir(np)); err != nil {
		return err
	}
	return retryFailover(h.wait, func() error { return h.client.RenameNoReplace(op, np) })
}

func (h *HDFS) Remove(name string) error {
	p, err := h.path(name)
	if err != nil {
		return err
	}
	if err := h.remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (h *HDFS) RemoveAll(name string) error {
	p, err := h.path(name)
	if err != nil {
		return err
	}
	if p == h.root {
		return errors.New("warehouse: refusing to remove the warehouse root")
	}
	if err := retryIdempotent(h.wait, func() error { return h.client.RemoveAll(p) }); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (h *HDFS) ReadDir(name string) ([]fs.FileInfo, error) {
	p, err := h.path(name)
	if err != nil {
		return nil, err
	}
	var infos []fs.FileInfo
	err = retryIdempotent(h.wait, func() (err error) { infos, err = h.client.ReadDir(p); return err })
	if err != nil {
		return nil, err
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name() < infos[j].Name() })
	return infos, nil
}

func (h *HDFS) Stat(name string) (fs.FileInfo, error) {
	p, err := h.path(name)
	if err != nil {
		return nil, err
	}
	return h.stat(p)
}

func (h *HDFS) MkdirAll(name string) error {
	p, err := h.path(name)
	if err != nil {
		return err
	}
	return h.mkdirAll(p)
}
