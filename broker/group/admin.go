package group

import (
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Summary is a group as ListGroups shows it.
type Summary struct {
	Name         string
	State        State
	ProtocolType string
	// Generation counts the group's completed rebalances since this
	// coordinator took it (0 for a group with only committed offsets); the
	// group epoch of a consumer-protocol group.
	Generation int32
	// Type is "consumer" for a consumer-protocol group with members,
	// "classic" otherwise.
	Type string
	// ConsumerState is a consumer-protocol group's state (Assigning,
	// Reconciling, Stable), which State cannot name.
	ConsumerState string
}

// List returns the groups this broker coordinates: those with members and
// those with only committed offsets (Empty), sorted by name.
func (c *Coordinator) List() ([]Summary, *kerr.Error) {
	stored, err := c.store.Groups()
	if err != nil {
		c.log.Error("listing groups with committed offsets", "err", err)
		return nil, kerr.CoordinatorNotAvailable
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, kerr.CoordinatorNotAvailable
	}
	seen := map[string]bool{}
	var out []Summary
	for name, g := range c.groups {
		if c.cfg.Owns(name) && g.state != Empty {
			out = append(out, Summary{Name: name, State: g.state, ProtocolType: g.protocolType, Generation: g.generation})
			seen[name] = true
		}
	}
	for name, g := range c.consumers {
		if c.cfg.Owns(name) && len(g.members) > 0 {
			out = append(out, Summary{Name: name, State: Stable, ProtocolType: "consumer", Generation: g.epoch, Type: "consumer", ConsumerState: g.state()})
			seen[name] = true
		}
	}
	for _, name := range stored {
		if !seen[name] && c.cfg.Owns(name) {
			out = append(out, Summary{Name: name, State: Empty})
			seen[name] = true
		}
	}
	for name := range c.emptied {
		if !seen[name] && c.cfg.Owns(name) && c.emptiedLocked(name) {
			out = append(out, Summary{Name: name, State: Empty})
		}
	}
	for i := range out {
		if out[i].Type == "" {
			out[i].Type = "classic"
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Description is a group as DescribeGroups shows it. A group that has
// neither members nor committed offsets is Dead.
type Description struct {
	Name         string
	State        State
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// MemberDescription is one member. Metadata and Assignment are set only in
// a Stable group, as in Kafka: before, they are not final.
type MemberDescription struct {
	ID         string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// Describe returns a group's state and members. A consumer-protocol group
// with members is not described here (GROUP_ID_NOT_FOUND, as Kafka answers
// DescribeGroups for it): DescribeConsumer does.
func (c *Coordinator) Describe(name string) (Description, *kerr.Error) {
	c.mu.Lock()
	consumer := c.isConsumerGroupLocked(name)
	c.mu.Unlock()
	if consumer {
		return Description{}, kerr.GroupIDNotFound
	}
	if d, found, err := c.describeLive(name); err != nil || found {
		return d, err
	}
	offsets, err := c.store.Load(name)
	if err != nil {
		c.log.Error("reading committed offsets", "group", name, "err", err)
		return Description{}, kerr.CoordinatorNotAvailable
	}
	c.mu.Lock()
	emptied := c.emptiedLocked(name)
	c.mu.Unlock()
	if len(offsets) > 0 || emptied {
		return Description{Name: name, State: Empty}, nil
	}
	return Description{Name: name, State: Dead}, nil
}

func (c *Coordinator) describeLive(name string) (Description, bool, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(name); err != nil {
		return Description{}, false, err
	}
	g := c.groups[name]
	if g == nil || g.state == Empty {
		return Description{}, false, nil // the store knows whether it exists
	}
	d := Description{Name: name, State: g.state, ProtocolType: g.protocolType, Protocol: g.protocol}
	for _, m := range g.sortedMembers() {
		md := MemberDescription{ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if g.state == Stable {
			md.Metadata, md.Assignment = m.metadata(g.protocol), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d, true, nil
}

// Delete forgets a group without members, with its committed offsets:
// NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND when there is
// nothing to delete.
func (c *Coordinator) Delete(name string) *kerr.Error {
	c.mu.Lock()
	if err := c.check(name); err != nil {
		c.mu.Unlock()
		return err
	}
	g := c.groups[name]
	if g != nil && len(g.members) > 0 || c.isConsumerGroupLocked(name) {
		c.mu.Unlock()
		return kerr.NonEmptyGroup
	}
	c.mu.Unlock()

	c.mu.Lock()
	emptied := c.emptiedLocked(name)
	delete(c.emptied, name)
	c.mu.Unlock()
	err := c.store.Delete(name)
	switch {
	case errors.Is(err, ErrGroupInUse):
		return kerr.NonEmptyGroup
	case errors.Is(err, ErrNoGroup) && g == nil && !emptied:
		return kerr.GroupIDNotFound
	case err != nil && !errors.Is(err, ErrNoGroup):
		c.log.Error("deleting committed offsets", "group", name, "err", err)
		return kerr.CoordinatorNotAvailable
	}
	c.mu.Lock()
	if g := c.groups[name]; g != nil && len(g.members) == 0 {
		delete(c.groups, name)
	}
	c.mu.Unlock()
	c.log.Info("group deleted", "group", name)
	return nil
}
