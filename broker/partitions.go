package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// partitions holds the open logs of the partitions this broker stores, each
// in DataDir/<topic>-<partition>.
type partitions struct {
	dir    string
	base   log.Config
	logger *slog.Logger

	mu   sync.RWMutex // read-locked on every produce and fetch; written when a partition opens or goes
	logs map[string]map[int32]*log.Log

	cleaner *log.Cleaner // compacts the logs whose cleanup policy says so
}

func newPartitions(dir string, base log.Config, logger *slog.Logger) *partitions {
	return &partitions{dir: dir, base: base, logger: logger, logs: map[string]map[int32]*log.Log{},
		cleaner: log.NewCleaner(base.Cleaner, logger)}
}

// get returns the open log of t's partition p, opening (and recovering) it on
// first use with t's per-topic configuration.
func (ps *partitions) get(t cluster.Topic, p int32) (*log.Log, error) {
	ps.mu.RLock()
	l := ps.logs[t.Name][p]
	ps.mu.RUnlock()
	if l != nil {
		return l, nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if l := ps.logs[t.Name][p]; l != nil {
		return l, nil // opened meanwhile
	}
	cfg, err := topicLogConfig(ps.base, t.Configs)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", t.Name, err)
	}
	dir := filepath.Join(ps.dir, t.Name+"-"+strconv.Itoa(int(p)))
	l, rep, err := log.Open(dir, cfg, ps.logger.With("topic", t.Name, "partition", p))
	if err != nil {
		return nil, fmt.Errorf("opening partition %s-%d: %w", t.Name, p, err)
	}
	if !rep.Clean && rep.TruncatedBytes > 0 {
		ps.logger.Warn("partition recovered with data cut from its tail",
			"topic", t.Name, "partition", p, "truncated_bytes", rep.TruncatedBytes,
			"truncated_at_offset", rep.TruncatedAt, "reason", rep.Reason)
	}
	if ps.logs[t.Name] == nil {
		ps.logs[t.Name] = map[int32]*log.Log{}
	}
	ps.logs[t.Name][p] = l
	ps.cleaner.Add(l)
	return l, nil
}

// topics lists the topics that have open logs.
func (ps *partitions) topics() []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var names []string
	for n := range ps.logs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// deleteTopic closes and removes every local partition of topic, including
// partitions never opened in this process.
func (ps *partitions) deleteTopic(topic string) {
	ps.mu.Lock()
	open := ps.logs[topic]
	delete(ps.logs, topic)
	ps.mu.Unlock()
	for p, l := range open {
		if err := l.Delete(); err != nil {
			ps.logger.Error("deleting partition", "topic", topic, "partition", p, "err", err)
		}
	}
	entries, _ := os.ReadDir(ps.dir)
	for _, e := range entries {
		name, _, ok := cutPartitionDir(e.Name())
		if ok && name == topic && e.IsDir() {
			if err := os.RemoveAll(filepath.Join(ps.dir, e.Name())); err != nil {
				ps.logger.Error("deleting partition directory", "dir", e.Name(), "err", err)
			}
		}
	}
}

// closeAll flushes and closes every log, writing their clean-shutdown marks.
func (ps *partitions) closeAll() error {
	ps.cleaner.Close()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var errs []error
	for topic, m := range ps.logs {
		for p, l := range m {
			if err := l.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing %s-%d: %w", topic, p, err))
			}
		}
	}
	ps.logs = map[string]map[int32]*log.Log{}
	return errors.Join(errs...)
}

// cutPartitionDir splits "<topic>-<partition>" (topics may contain '-').
func cutPartitionDir(dir string) (topic string, partition int32, ok bool) {
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

func splitHostPort(addr string) (string, int32, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return "", 0, false
	}
	return host, int32(p), true
}
