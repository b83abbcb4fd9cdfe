package warehouse

import (
	"context"
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
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// HDFS is a warehouse in HDFS, reached through the NameNode's RPC protocol
// (github.com/colinmarc/hdfs/v2); no Hadoop installation is needed.
//
// The user is the URL's user (hdfs://etl@namenode:8020/data), else
// HADOOP_USER_NAME, else the current user: the same rule as Hadoop's own
// client with simple authentication.
type HDFS struct {
	client *hdfs.Client
	root   string // absolute path in HDFS
	url    string
}

// OpenHDFS connects to the NameNode in u and creates the root directory if
// it is missing.
func OpenHDFS(u *url.URL) (*HDFS, error) { return openHDFS(u, true) }

func openHDFS(u *url.URL, create bool) (*HDFS, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("warehouse URL %q: no namenode host:port", u.String())
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "8020")
	}
	name := u.User.Username()
	if name == "" {
		name = os.Getenv("HADOOP_USER_NAME")
	}
	if name == "" {
		cur, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("warehouse %s: no user name: %w", u, err)
		}
		name = cur.Username
	}
	dialer := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, address)
	}
	client, err := hdfs.NewClient(hdfs.ClientOptions{
		Addresses:        []string{addr},
		User:             name,
		NamenodeDialFunc: dial,
		DatanodeDialFunc: dial,
	})
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: cannot reach the HDFS NameNode at %s: %w", u.Redacted(), addr, err)
	}
	root := path.Clean("/" + u.Path)
	h := &HDFS{client: client, root: root, url: "hdfs://" + addr + root}
	// The first NameNode call is where an unreachable or wrong address shows.
	if !create {
		if _, err := client.Stat(root); err != nil {
			client.Close()
			return nil, fmt.Errorf("warehouse %s: %w", h.url, err)
		}
		return h, nil
	}
	if err := client.MkdirAll(root, 0o755); err != nil {
		client.Close()
		return nil, fmt.Errorf("warehouse %s: cannot use %s on the HDFS NameNode at %s: %w", h.url, root, addr, err)
	}
	return h, nil
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
	if err := h.client.MkdirAll(path.Dir(p), 0o755); err != nil {
		return nil, err
	}
	if err := h.client.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := h.client.Create(p)
	if err != nil {
		return nil, err
	}
	return hdfsFile{f}, nil
}

// hdfsFile retries Close while the NameNode has not yet heard from the
// DataNodes that the last block is stored: the data is acknowledged, but
// the file is complete (and durable) only once Close returns nil. Hadoop's
// own client retries the same way.
//
// An empty Write is dropped: the client would allocate a block for it that
// no DataNode ever receives, and the file could never be completed.
type hdfsFile struct{ *hdfs.FileWriter }

func (f hdfsFile) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return f.FileWriter.Write(p)
}

func (f hdfsFile) Close() error {
	err := f.FileWriter.Close()
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
	if err := h.client.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := h.client.Create(p)
	if err != nil {
		return err
	}
	hf := hdfsFile{f}
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
	return h.client.Open(p)
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
	if err := h.client.MkdirAll(path.Dir(np), 0o755); err != nil {
		return err
	}
	return h.client.Rename(op, np)
}

func (h *HDFS) Remove(name string) error {
	p, err := h.path(name)
	if err != nil {
		return err
	}
	if err := h.client.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
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
	if err := h.client.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (h *HDFS) ReadDir(name string) ([]fs.FileInfo, error) {
	p, err := h.path(name)
	if err != nil {
		return nil, err
	}
	infos, err := h.client.ReadDir(p)
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
	return h.client.Stat(p)
}

func (h *HDFS) MkdirAll(name string) error {
	p, err := h.path(name)
	if err != nil {
		return err
	}
	return h.client.MkdirAll(p, 0o755)
}
