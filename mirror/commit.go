package mirror

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
)

// commitLoop writes acknowledged offsets to the source's offset registry
// every Config.CommitInterval until ctx ends.
func (s *source) commitLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.commit()
		}
	}
}

// commit writes, for every partition being copied, the offset below which
// the target has everything, if it moved.
func (s *source) commit() {
	if g := s.currentGroup(); g != nil {
		s.commitParts(g.ID(), s.partitions())
	}
}

// commitParts commits parts as the group member self.
func (s *source) commitParts(self string, parts []*partition) {
	var failed int
	var firstErr error
	for _, part := range parts {
		part.mu.Lock()
		safe, committed := part.acks.safe, part.committed
		part.mu.Unlock()
		if safe <= committed {
			continue
		}
		err := s.writeOffset(self, part, safe, committed >= 0)
		if errors.Is(err, errNotOwner) {
			continue // the group gave it away; applyOwnership drops it, if it has not yet
		}
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		part.mu.Lock()
		part.committed = max(part.committed, safe)
		part.mu.Unlock()
	}
	if failed > 0 {
		s.log.Warn("committing offsets failed; will retry (a crash now repeats more records, it loses none)", "partitions", failed, "err", firstErr)
	}
}

var errNotOwner = errors.New("partition owned by another consumer")

// writeOffset stores offset as the next offset to copy, in the format of
// Kafka 0.8's ZooKeeper consumer, provided we still own the partition: the
// owner node names us, and the write is conditional on that node's version
// so that it fails if the node changed hands in between.
func (s *source) writeOffset(self string, part *partition, offset int64, exists bool) error {
	conn, paths := s.zk.Conn, s.zk.Paths
	owner := paths.Owner(s.cfg.Group, part.topic, part.partition)
	who, stat, err := conn.Get(owner)
	if errors.Is(err, zk.ErrNoNode) || (err == nil && string(who) != self) {
		return errNotOwner
	}
	if err != nil {
		return fmt.Errorf("reading owner of %s/%d: %w", part.topic, part.partition, err)
	}
	path := paths.Offset(s.cfg.Group, part.topic, part.partition)
	data := []byte(strconv.FormatInt(offset, 10))
	check := &zk.CheckVersionRequest{Path: owner, Version: stat.Version}
	write := func(op any) error {
		_, err := conn.Multi(check, op)
		return err
	}
	create := func() error {
		if err := s.zk.EnsurePath(paths.Offsets(s.cfg.Group, part.topic)); err != nil {
			return err
		}
		return write(&zk.CreateRequest{Path: path, Data: data, Acl: zk.WorldACL(zk.PermAll)})
	}
	set := func() error { return write(&zk.SetDataRequest{Path: path, Data: data, Version: -1}) }
	if exists {
		if err = set(); errors.Is(err, zk.ErrNoNode) {
			err = create() // deleted by hand; if the owner node is gone instead, this fails the same way
		}
	} else if err = create(); errors.Is(err, zk.ErrNodeExists) {
		err = set()
	}
	return wrapCommit(part, offset, err)
}

func wrapCommit(part *partition, offset int64, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return errNotOwner
	}
	return fmt.Errorf("committing offset %d of %s/%d: %w", offset, part.topic, part.partition, err)
}
