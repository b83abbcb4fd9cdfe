package auth

// SCRAM credentials of a cluster, in ZooKeeper: one node per user,
// <chroot>/config/users/<name> (path-escaped), holding the same JSON as one user of the
// standalone file. Every login reads the node, so a user added, changed or
// deleted through any broker applies at once on all of them. Changes are
// compare-and-set on the node's version, so two brokers altering one user
// at once do not lose either change.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/go-zookeeper/zk"
	"github.com/xdg-go/scram"

	"github.com/tributary-io/tributary/cluster"
)

// ZooKeeperCredentials is the CredentialStore of a cluster.
type ZooKeeperCredentials struct {
	s *cluster.ZKSession
}

// NewZooKeeperCredentials keeps credentials under the session's chroot.
func NewZooKeeperCredentials(s *cluster.ZKSession) *ZooKeeperCredentials {
	return &ZooKeeperCredentials{s: s}
}

func (z *ZooKeeperCredentials) dir() string { return z.s.Paths.Users() }

// path is the user's node (cluster.ZKPaths.User: any name is one node).
func (z *ZooKeeperCredentials) path(user string) (string, error) {
	if user == "" || user == "." || user == ".." {
		return "", fmt.Errorf("user name %q is not allowed", user)
	}
	return z.s.Paths.User(user), nil
}

// read returns a user's credentials and the node's version (-1: no node).
func (z *ZooKeeperCredentials) read(user string) (userCredentials, int32, error) {
	p, err := z.path(user)
	if err != nil {
		return nil, -1, err
	}
	data, st, err := z.s.Conn.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, -1, fmt.Errorf("credentials of %q in ZooKeeper: %w", user, err)
	}
	var u userCredentials
	if err := json.Unmarshal(data, &u); err != nil {
		return nil, -1, fmt.Errorf("credentials of %q in ZooKeeper (%s): %w", user, p, err)
	}
	return u, st.Version, nil
}

// Lookup implements CredentialStore.
func (z *ZooKeeperCredentials) Lookup(user, mechanism string) (scram.StoredCredentials, bool, error) {
	if _, err := z.path(user); err != nil {
		return scram.StoredCredentials{}, false, nil // no such user can exist
	}
	u, _, err := z.read(user)
	if err != nil {
		return scram.StoredCredentials{}, false, err
	}
	c, ok := u.lookup(mechanism)
	return c, ok, nil
}

// update applies fn to the user's current credentials and writes the
// result (deleting the node when none remain), retrying on a concurrent
// change.
func (z *ZooKeeperCredentials) update(user string, fn func(userCredentials) error) error {
	p, err := z.path(user)
	if err != nil {
		return err
	}
	if err := z.s.EnsurePath(z.dir()); err != nil {
		return fmt.Errorf("credentials in ZooKeeper: %w", err)
	}
	for {
		u, version, err := z.read(user)
		if err != nil {
			return err
		}
		if u == nil {
			u = userCredentials{}
		}
		if err := fn(u); err != nil {
			return err
		}
		data, _ := json.Marshal(u)
		switch {
		case len(u) == 0 && version >= 0:
			err = z.s.Conn.Delete(p, version)
		case len(u) == 0:
			return nil
		case version < 0:
			_, err = z.s.Conn.Create(p, data, 0, zk.WorldACL(zk.PermAll))
		default:
			_, err = z.s.Conn.Set(p, data, version)
		}
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
			continue // changed under us: read again
		}
		if err != nil {
			return fmt.Errorf("credentials of %q in ZooKeeper: %w", user, err)
		}
		return nil
	}
}

// Put implements CredentialStore.
func (z *ZooKeeperCredentials) Put(user, mechanism string, cred scram.StoredCredentials) error {
	if err := checkCredential(user, mechanism, cred); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return z.update(user, func(u userCredentials) error {
		u[mechanism] = toFileCredential(cred)
		return nil
	})
}

// Delete implements CredentialStore.
func (z *ZooKeeperCredentials) Delete(user, mechanism string) error {
	return z.update(user, func(u userCredentials) error {
		if len(u) == 0 {
			return fmt.Errorf("credentials: user %q: %w", user, ErrNoCredential)
		}
		if mechanism == "" {
			clear(u)
			return nil
		}
		if _, ok := u[mechanism]; !ok {
			return fmt.Errorf("credentials: user %q, %s: %w", user, mechanism, ErrNoCredential)
		}
		delete(u, mechanism)
		return nil
	})
}

// List implements CredentialStore.
func (z *ZooKeeperCredentials) List() ([]UserCredentials, error) {
	names, _, err := z.s.Conn.Children(z.dir())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credentials in ZooKeeper: %w", err)
	}
	out := make([]UserCredentials, 0, len(names))
	for _, node := range names {
		name, err := cluster.UserName(node)
		if err != nil {
			continue // not a node of ours
		}
		u, _, err := z.read(name)
		if err != nil {
			return nil, err
		}
		if len(u) > 0 {
			out = append(out, u.describe(name))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out, nil
}
