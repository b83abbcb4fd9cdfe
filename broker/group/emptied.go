package group

import "time"

// EmptiedGroupListed is how long a group that lost its last member or its
// last committed offset stays listed (ListGroups, DescribeGroups: Empty)
// before it is forgotten: Kafka's offsets.retention.check.interval.ms, the
// period of the cleanup that removes such groups there. Tools that delete
// a group's offsets and then look at the group (kafka-consumer-groups
// --delete-offsets, then --describe or --list) find it as Kafka shows it,
// instead of gone.
const EmptiedGroupListed = 10 * time.Minute

// markEmptiedLocked keeps name listed until EmptiedGroupListed from now.
// Call with c.mu held.
func (c *Coordinator) markEmptiedLocked(name string) {
	if c.emptied == nil {
		c.emptied = map[string]time.Time{}
	}
	c.emptied[name] = c.now().Add(EmptiedGroupListed)
}

// markEmptiedIfGone marks a group whose committed offsets were just
// deleted, when it has neither members nor offsets left.
func (c *Coordinator) markEmptiedIfGone(name string) {
	offsets, err := c.store.Load(name)
	if err != nil || len(offsets) > 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[name]; g == nil || len(g.members) == 0 {
		c.markEmptiedLocked(name)
	}
}

// emptiedLocked reports whether name is still listed as emptied. Call
// with c.mu held.
func (c *Coordinator) emptiedLocked(name string) bool {
	until, ok := c.emptied[name]
	return ok && c.now().Before(until)
}

// pruneEmptiedLocked forgets the emptied groups whose time is up. Call
// with c.mu held.
func (c *Coordinator) pruneEmptiedLocked(now time.Time) {
	for name, until := range c.emptied {
		if !now.Before(until) || !c.cfg.Owns(name) {
			delete(c.emptied, name)
		}
	}
}
