package quota

// Where client quotas persist: DataDir/quotas.json for a standalone broker
// (replaced atomically), one ZooKeeper node <chroot>/config/quotas for a
// cluster, changed by compare-and-set and watched by every broker, so a
// quota altered through one broker applies on all of them within a watch
// event. One node rather than Kafka's /config/users/<user>/clients/<id>
// tree: /config/users/<user> already holds the user's SCRAM credentials
// (broker/auth/credentials_zk.go), and one node is read in one round trip.
//
// Both hold the same JSON: a list of entities, each with its components
// as the protocol names them (type "user" or "client-id", a null name for
// the default) and its quotas.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Store is where quotas persist: NewFile or NewZooKeeper.
type Store interface {
	load() (Table, error)
	// update applies fn to a copy of the current quotas and persists the
	// result; an error from fn leaves them unchanged.
	update(fn func(Table) error) (Table, error)
}

// Entity types of the protocol.
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
)

// Component is one component of an entity, as on the wire.
type Component struct {
	Type string  `json:"type"`
	Name *string `json:"name"` // nil: the default
}

type storedQuota struct {
	Entity []Component        `json:"entity"`
	Quotas map[string]float64 `json:"quotas"`
}

// components lists e's parts in the protocol's form, user first.
func (e Entity) Components() []Component {
	var out []Component
	add := func(typ string, p entityPart) {
		if !p.set {
			return
		}
		c := Component{Type: typ}
		if !p.def {
			name := p.name
			c.Name = &name
		}
		out = append(out, c)
	}
	add(EntityUser, e.user)
	add(EntityClientID, e.client)
	return out
}

// EntityOf builds an entity from its components, refusing unknown types,
// repeated types and an empty entity.
func EntityOf(comps []Component) (Entity, error) {
	var e Entity
	for _, c := range comps {
		p := defaultPart
		if c.Name != nil {
			p = named(*c.Name)
		}
		var dst *entityPart
		switch c.Type {
		case EntityUser:
			dst = &e.user
		case EntityClientID:
			dst = &e.client
		default:
			return e, fmt.Errorf("entity type %q is not served: Tributary has quotas for %q and %q", c.Type, EntityUser, EntityClientID)
		}
		if dst.set {
			return e, fmt.Errorf("entity type %q given twice", c.Type)
		}
		*dst = p
	}
	if !e.user.set && !e.client.set {
		return e, errors.New("empty quota entity")
	}
	return e, nil
}

func encodeQuotas(t Table) []byte {
	list := make([]storedQuota, 0, len(t))
	for e, v := range t {
		list = append(list, storedQuota{Entity: e.Components(), Quotas: v})
	}
	sort.Slice(list, func(i, j int) bool { return EntityString(list[i].Entity) < EntityString(list[j].Entity) })
	data, _ := json.MarshalIndent(list, "", "  ")
	return data
}

func EntityString(comps []Component) string {
	s := ""
	for _, c := range comps {
		name := "<default>"
		if c.Name != nil {
			name = "=" + *c.Name
		}
		s += c.Type + name + " "
	}
	return s
}

func decodeQuotas(data []byte, where string) (Table, error) {
	var list []storedQuota
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("quotas in %s: %w", where, err)
	}
	t := Table{}
	for _, q := range list {
		e, err := EntityOf(q.Entity)
		if err != nil {
			return nil, fmt.Errorf("quotas in %s: %w", where, err)
		}
		for key, rate := range q.Quotas {
			if err := checkQuota(key, rate, false); err != nil {
				return nil, fmt.Errorf("quotas in %s, entity %s: %w", where, EntityString(q.Entity), err)
			}
		}
		t[e] = q.Quotas
	}
	return t, nil
}

// clone copies t so an update never changes a snapshot being read.
func (t Table) clone() Table {
	out := make(Table, len(t))
	for e, v := range t {
		vc := make(Values, len(v))
		for k, x := range v {
			vc[k] = x
		}
		out[e] = vc
	}
	return out
}

type fileStore struct{ path string }

func (f fileStore) load() (Table, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return Table{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("quotas: %w", err)
	}
	return decodeQuotas(data, f.path)
}

func (f fileStore) update(fn func(Table) error) (Table, error) {
	cur, err := f.load()
	if err != nil {
		return nil, err
	}
	t := cur.clone()
	if err := fn(t); err != nil {
		return nil, err
	}
	// AlterClientQuotas requests of different connections are not
	// serialized: each write has a temporary file of its own. 0600 as the
	// file always had.
	if err := atomicfile.Write(f.path, encodeQuotas(t), atomicfile.Perm(0o600), atomicfile.UniqueTemp()); err != nil {
		return nil, fmt.Errorf("quotas: %w", err)
	}
	return t, nil
}

type zkStore struct{ s *cluster.ZKSession }

func (z zkStore) path() string { return z.s.Paths.Quotas() }

func (z zkStore) read() (Table, int32, error) {
	data, st, err := z.s.Conn.Get(z.path())
	if errors.Is(err, zk.ErrNoNode) {
		return Table{}, -1, nil
	}
	if err != nil {
		return nil, -1, fmt.Errorf("quotas in ZooKeeper: %w", err)
	}
	t, err := decodeQuotas(data, "ZooKeeper "+z.path())
	return t, st.Version, err
}

func (z zkStore) load() (Table, error) {
	t, _, err := z.read()
	return t, err
}

func (z zkStore) update(fn func(Table) error) (Table, error) {
	if err := z.s.EnsurePath(z.s.Paths.Config()); err != nil {
		return nil, fmt.Errorf("quotas in ZooKeeper: %w", err)
	}
	for {
		t, version, err := z.read()
		if err != nil {
			return nil, err
		}
		if err := fn(t); err != nil {
			return nil, err
		}
		data := encodeQuotas(t)
		retry, err := cluster.WriteNodeCAS(z.s, z.path(), data, version)
		if retry {
			continue // changed under us: read again
		}
		if err != nil {
			return nil, fmt.Errorf("quotas in ZooKeeper: %w", err)
		}
		return t, nil
	}
}

// watch calls changed whenever the quota node changes, until stop closes.
func (z zkStore) watch(stop <-chan struct{}, changed func()) {
	cluster.WatchNode(z.s, z.path(), stop, changed)
}

// NewFile is a standalone broker's store, the JSON file at path.
func NewFile(path string) Store { return fileStore{path: path} }

// NewZooKeeper is a cluster's store, one node every broker watches.
func NewZooKeeper(s *cluster.ZKSession) Store { return zkStore{s: s} }
