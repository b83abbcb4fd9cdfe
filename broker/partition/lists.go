package partition

import (
	"os"
	"sort"

	"github.com/tributary-io/tributary/broker/log"
)

// isOpen reports whether key has an open (or opening) log.
func (ps *Table) isOpen(key Key) bool {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.logs[key] != nil
}

// OpenLogsOf returns topic's partition logs that are open now, waiting for
// those being opened (they may have read the topic's configs before a
// change); a closed one reads its topic's configs afresh when it opens.
func (ps *Table) OpenLogsOf(topic string) []*log.Log {
	ps.mu.RLock()
	var pending []*openLog
	for key, o := range ps.logs {
		if key.Topic == topic {
			pending = append(pending, o)
		}
	}
	ps.mu.RUnlock()
	var open []*log.Log
	for _, o := range pending {
		<-o.ready
		if o.l != nil {
			open = append(open, o.l)
		}
	}
	return open
}

// OpenCount is the number of open logs and the descriptors they hold.
func (ps *Table) OpenCount() (logs, fds int) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(ps.ring), ps.fds
}

// Topics lists the topics that have open logs.
func (ps *Table) Topics() []string {
	seen := map[string]bool{}
	ps.mu.RLock()
	for k := range ps.logs {
		seen[k.Topic] = true
	}
	ps.mu.RUnlock()
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// OpenLog is an open partition log, as OpenLogs lists it.
type OpenLog struct {
	Key
	Log *log.Log
}

// OpenLogs lists the open partition logs, not those still opening.
// Partitions whose logs are closed (opened lazily, or closed to stay within
// the descriptor budget) are not listed: a metrics scrape must not open
// files.
func (ps *Table) OpenLogs() []OpenLog {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	var out []OpenLog
	for key, o := range ps.logs {
		select {
		case <-o.ready:
			if o.l != nil {
				out = append(out, OpenLog{key, o.l})
			}
		default: // still opening
		}
	}
	return out
}

// Stored lists the partitions that have a directory here, open or not.
func (ps *Table) Stored() ([]Key, error) {
	entries, err := os.ReadDir(ps.dir)
	if err != nil {
		return nil, err
	}
	var out []Key
	for _, e := range entries {
		topic, p, ok := ParseDir(e.Name())
		if ok && e.IsDir() {
			out = append(out, Key{topic, p})
		}
	}
	return out, nil
}
