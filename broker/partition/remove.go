package partition

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/broker/log"
)

// take removes every entry matching match from the open set and returns
// them, waiting for their opening to finish, and for closes in progress.
func (ps *Table) take(match func(Key) bool) []*openLog {
	return ps.takeWith(match, nil)
}

// Take removes the open logs of the partitions matching match from the
// table and returns them, for the caller to close or delete; it waits for
// their opening to finish, and for closes in progress.
func (ps *Table) Take(match func(Key) bool) []*log.Log {
	var out []*log.Log
	for _, o := range ps.take(match) {
		out = append(out, o.l)
	}
	return out
}

// takeWith is take; bury, if set, is called under the same lock, so no
// open can slip in between.
func (ps *Table) takeWith(match func(Key) bool, bury func()) []*openLog {
	ps.mu.Lock()
	if bury != nil {
		bury()
	}
	var taken []*openLog
	var waits []chan struct{}
	for k, o := range ps.logs {
		if match(k) {
			ps.removeLocked(o)
			delete(ps.logs, k)
			taken = append(taken, o)
		}
	}
	for k, ch := range ps.closing {
		if match(k) {
			waits = append(waits, ch)
		}
	}
	ps.mu.Unlock()
	for _, ch := range waits {
		<-ch
	}
	open := taken[:0]
	for _, o := range taken {
		<-o.ready
		if o.err == nil {
			open = append(open, o)
		}
	}
	return open
}

// DeleteTopic closes and removes every local partition of topic, including
// partitions not open in this process, and leaves a tombstone so that a
// request that looked the topic up before the delete cannot open it again.
func (ps *Table) DeleteTopic(topic string) {
	ps.dead.deleting.Lock()
	defer ps.dead.deleting.Unlock()
	taken := ps.takeWith(func(k Key) bool { return k.Topic == topic }, func() { ps.buryLocked(topic) })
	for _, o := range taken {
		if err := o.l.Delete(); err != nil {
			ps.logger.Error("deleting partition", "topic", topic, "partition", o.key.Partition, "err", err)
		}
	}
	entries, _ := os.ReadDir(ps.dir)
	for _, e := range entries {
		name, _, ok := ParseDir(e.Name())
		if ok && name == topic && e.IsDir() {
			if err := os.RemoveAll(filepath.Join(ps.dir, e.Name())); err != nil {
				ps.logger.Error("deleting partition directory", "dir", e.Name(), "err", err)
			}
		}
	}
}

// ParseDir splits a partition directory's name, "<topic>-<partition>"
// (topics may contain '-').
func ParseDir(dir string) (topic string, partition int32, ok bool) {
	i := strings.LastIndexByte(dir, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(dir[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, false
	}
	return dir[:i], int32(p), true
}
