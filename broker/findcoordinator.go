package broker

// FindCoordinator (key 10), v0-6.
//
// Each group has one coordinator: the live broker at index
// fnv32a(group) mod len(brokers) of the brokers sorted by id. Every broker
// computes the same answer from the same cluster view, and when a broker
// dies the groups it coordinated move to the others, which read the groups'
// committed offsets from the ZooKeeper offset registry. A standalone broker
// coordinates every group. Transaction coordinators (key type 1) and share
// groups (type 2) are not served: INVALID_REQUEST, with a message from v1.

import (
	"hash/fnv"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/cluster"
)

func (b *Broker) findCoordinator(req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		switch br, ok := b.coordinatorFor(key); {
		case req.CoordinatorType != 0:
			msg := "Tributary coordinates consumer groups only (key type 0); transactions and share groups are not supported"
			c.ErrorCode, c.ErrorMessage, c.NodeID = kerr.InvalidRequest.Code, &msg, -1
		case !ok:
			msg := "no live broker to coordinate the group; the cluster view may be catching up"
			c.ErrorCode, c.ErrorMessage, c.NodeID = kerr.CoordinatorNotAvailable.Code, &msg, -1
		default:
			c.NodeID, c.Host, c.Port = br.ID, br.Host, br.Port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 && len(resp.Coordinators) == 1 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	return resp
}

// coordinatorFor picks a group's coordinator among the live brokers.
func (b *Broker) coordinatorFor(group string) (cluster.Broker, bool) {
	brokers := b.meta.Brokers()
	if len(brokers) == 0 {
		return cluster.Broker{}, false
	}
	h := fnv.New32a()
	h.Write([]byte(group))
	return brokers[h.Sum32()%uint32(len(brokers))], true
}

// ownsGroup reports whether this broker is the group's coordinator.
func (b *Broker) ownsGroup(group string) bool {
	br, ok := b.coordinatorFor(group)
	return ok && br.ID == b.meta.Self().ID
}

// zkSessioner is implemented by cluster metadata that can lend its
// ZooKeeper session, so the offset registry shares the broker's session.
type zkSessioner interface {
	Session() *cluster.ZKSession
}

// startGroups starts the group coordinator with its offset store: the one
// configured, else the ZooKeeper offset registry in a cluster, else
// DataDir/groups.
func (b *Broker) startGroups() error {
	store := b.cfg.GroupOffsets
	if store == nil {
		switch m := b.meta.(type) {
		case zkSessioner:
			store = group.NewZooKeeperStore(m.Session())
		default:
			if _, standalone := m.(*standaloneMeta); !standalone {
				b.logger.Warn("cluster metadata has no ZooKeeper session to lend; committed offsets stay in this broker's data directory and do not follow a group to another coordinator")
			}
			ds, err := group.OpenDirStore(filepath.Join(b.cfg.DataDir, "groups"))
			if err != nil {
				return err
			}
			store = ds
		}
	}
	cfg := b.cfg.Groups
	cfg.Owns = b.ownsGroup
	if cfg.Logger == nil {
		cfg.Logger = b.logger
	}
	b.groups = group.New(cfg, store)
	return nil
}
