package cluster

import (
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// The cluster-wide records the broker keeps in one ZooKeeper node each
// (ACLs, quotas) are changed by read, modify, compare-and-set: WriteNodeCAS
// is the write, WatchNode the watch every broker keeps on the node.

// WriteNodeCAS creates the node at path with data (version < 0: it did not
// exist when read) or replaces it if it is still at version. retry is true
// when another writer changed the node since it was read: read it again.
func WriteNodeCAS(s *ZKSession, path string, data []byte, version int32) (retry bool, err error) {
	if version < 0 {
		_, err = s.Conn.Create(path, data, 0, zk.WorldACL(zk.PermAll))
	} else {
		_, err = s.Conn.Set(path, data, version)
	}
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) {
		return true, nil
	}
	return false, err
}

// WatchNode calls changed whenever the node at path is created, changed or
// deleted, until stop closes or the session ends. While ZooKeeper is out
// of reach it calls changed every second, since a change may have been
// missed.
func WatchNode(s *ZKSession, path string, stop <-chan struct{}, changed func()) {
	for {
		_, _, ev, err := s.Conn.ExistsW(path)
		if err != nil {
			select {
			case <-stop:
				return
			case <-s.Done():
				return
			case <-time.After(time.Second):
			}
			changed()
			continue
		}
		select {
		case <-stop:
			return
		case <-ev:
			changed()
		}
	}
}
