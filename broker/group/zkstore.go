package group

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/cluster"
)

// ZooKeeperStore keeps committed offsets in the paper's offset registry,
// /consumers/<group>/offsets/<topic>/<partition>, as decimal text: the format
// of Kafka 0.8's ZooKeeper consumer, and the one our own ZooKeeper consumer
// groups use, so both kinds of consumer and their tools read the same
// positions. Nothing is cached: whichever broker coordinates a group reads the
// registry, which is what lets a broker take a group over from a dead one.
//
// The registry holds only the offset: commit metadata is not kept.
type ZooKeeperStore struct {
	s *cluster.ZKSession
}

// NewZooKeeperStore stores offsets through an open session; the caller keeps
// ownership of the session.
func NewZooKeeperStore(s *cluster.ZKSession) *ZooKeeperStore {
	return &ZooKeeperStore{s: s}
}

func (z *ZooKeeperStore) offsetsDir(group string) string {
	return z.s.Paths.GroupOffsets(group)
}

func checkNames(group string, topics ...string) error {
	if err := cluster.ValidateName("group", group); err != nil {
		return fmt.Errorf("%w in ZooKeeper's offset registry: %v", ErrInvalidGroup, err)
	}
	for _, t := range topics {
		if err := cluster.ValidateName("topic", t); err != nil {
			return fmt.Errorf("%w in ZooKeeper's offset registry: %v", ErrInvalidGroup, err)
		}
	}
	return nil
}

func (z *ZooKeeperStore) Load(group string) (map[TopicPartition]Offset, error) {
	out := map[TopicPartition]Offset{}
	if checkNames(group) != nil {
		return out, nil // nothing can have been stored under it
	}
	topics, _, err := z.s.Conn.Children(z.offsetsDir(group))
	if errors.Is(err, zk.ErrNoNode) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", z.offsetsDir(group), err)
	}
	var paths []string
	var tps []TopicPartition
	for _, t := range topics {
		parts, _, err := z.s.Conn.Children(z.s.Paths.Offsets(group, t))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", z.s.Paths.Offsets(group, t), err)
		}
		for _, p := range parts {
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil || n < 0 {
				continue // not ours to interpret
			}
			tps = append(tps, TopicPartition{t, int32(n)})
			paths = append(paths, z.s.Paths.Offset(group, t, int32(n)))
		}
	}
	// The reads are independent: issue them together, so a group of many
	// partitions costs about one round trip, not one per partition.
	values := make([]int64, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, _, err := z.s.Conn.Get(p)
			if err != nil {
				errs[i] = err
				return
			}
			values[i], errs[i] = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		}()
	}
	wg.Wait()
	for i, tp := range tps {
		switch {
		case errors.Is(errs[i], zk.ErrNoNode):
		case errors.Is(errs[i], strconv.ErrSyntax), errors.Is(errs[i], strconv.ErrRange):
			return nil, fmt.Errorf("offset registry node %s does not hold a decimal offset: %w", paths[i], errs[i])
		case errs[i] != nil:
			return nil, fmt.Errorf("reading %s: %w", paths[i], errs[i])
		default:
			out[tp] = Offset{Offset: values[i]}
		}
	}
	return out, nil
}

// Commit writes every offset in one ZooKeeper transaction, so a commit is
// all or nothing as in Kafka. Nodes that do not exist yet are created first
// (their parents too); that happens once per partition.
func (z *ZooKeeperStore) Commit(group string, offsets map[TopicPartition]Offset) error {
	topics := make([]string, 0, len(offsets))
	for tp := range offsets {
		topics = append(topics, tp.Topic)
	}
	if err := checkNames(group, topics...); err != nil {
		return err
	}
	ops := make([]any, 0, len(offsets))
	for tp, o := range offsets {
		ops = append(ops, &zk.SetDataRequest{
			Path:    z.s.Paths.Offset(group, tp.Topic, tp.Partition),
			Data:    []byte(strconv.FormatInt(o.Offset, 10)),
			Version: -1,
		})
	}
	if len(ops) == 0 {
		return nil
	}
	for attempt := 0; ; attempt++ {
		results, err := z.s.Conn.Multi(ops...)
		if err == nil {
			return nil
		}
		noNode := errors.Is(err, zk.ErrNoNode)
		for _, r := range results {
			noNode = noNode || errors.Is(r.Error, zk.ErrNoNode)
		}
		if !noNode || attempt > 0 {
			return fmt.Errorf("committing offsets of group %s to ZooKeeper: %w", group, err)
		}
		for _, op := range ops {
			if err := z.ensure(op.(*zk.SetDataRequest).Path); err != nil {
				return fmt.Errorf("committing offsets of group %s to ZooKeeper: %w", group, err)
			}
		}
	}
}

// ensure creates an offset node (empty offset -1 until the commit sets it)
// and its parents.
func (z *ZooKeeperStore) ensure(path string) error {
	if err := z.s.EnsurePath(path[:strings.LastIndexByte(path, '/')]); err != nil {
		return err
	}
	_, err := z.s.Conn.Create(path, []byte("-1"), 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}

// Delete removes the group's offsets and, when nothing else is left under
// it, the group's node. A group whose paper-style consumers are registered
// is refused: they would recreate offsets at their next commit anyway.
func (z *ZooKeeperStore) Delete(group string) error {
	if checkNames(group) != nil {
		return ErrNoGroup
	}
	ids, _, err := z.s.Conn.Children(z.s.Paths.ConsumerIDs(group))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("listing %s: %w", z.s.Paths.ConsumerIDs(group), err)
	}
	if len(ids) > 0 {
		return fmt.Errorf("%w: %d consumers under %s", ErrGroupInUse, len(ids), z.s.Paths.ConsumerIDs(group))
	}
	ok, _, err := z.s.Conn.Exists(z.s.Paths.Group(group))
	if err != nil {
		return fmt.Errorf("reading %s: %w", z.s.Paths.Group(group), err)
	}
	if !ok {
		return ErrNoGroup
	}
	if err := deleteTree(z.s.Conn, z.s.Paths.Group(group)); err != nil {
		return fmt.Errorf("deleting %s: %w", z.s.Paths.Group(group), err)
	}
	return nil
}

func deleteTree(c *zk.Conn, path string) error {
	kids, _, err := c.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := deleteTree(c, path+"/"+k); err != nil {
			return err
		}
	}
	err = c.Delete(path, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// Groups lists every group under /consumers, including those of the paper's
// ZooKeeper consumers: they are groups with committed offsets too.
func (z *ZooKeeperStore) Groups() ([]string, error) {
	root := z.s.Paths.Consumers()
	names, _, err := z.s.Conn.Children(root)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", root, err)
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return sortedNames(set), nil
}
