// Package clusterapi serves the APIs that ask a cluster's controller to
// move leadership or replicas: ElectLeaders and
// AlterPartitionReassignments, with ListPartitionReassignments to follow
// the moves under way.
//
// One file per API holds its versions, its handler and its ACL rule (Alter
// on the cluster to change, Describe to list). The work is cluster/'s: a
// handler finds out whether the broker's metadata has a controller (a
// ZooKeeper cluster's does; a standalone broker has one replica per
// partition and nothing to move), asks it, and turns its answers into
// Kafka's codes through broker/kafkaerr.
//
// The broker builds Handlers with New from what they use and adds them to
// its registry with Register; nothing here imports the root broker.
package clusterapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/cluster"
)

// Config is what the cluster APIs use from the broker.
type Config struct {
	// Authz decides each request (broker/acl's helper); nil allows
	// everything.
	Authz *acl.Authorizer
	// Metadata is the broker's cluster metadata; the APIs serve what it
	// can do of Elector and Reassigner.
	Metadata cluster.Metadata
	// Logger records failed elections.
	Logger *slog.Logger
}

// Elector is cluster metadata with a controller that elects leaders
// (cluster.ZooKeeper).
type Elector interface {
	ElectLeaders(ctx context.Context, unclean bool, parts []cluster.TopicPartition) (map[cluster.TopicPartition]error, error)
}

// Reassigner is cluster metadata that moves partitions
// (cluster.ZooKeeper).
type Reassigner interface {
	AlterReassignment(ctx context.Context, topic string, partition int32, replicas []int32) error
	Reassignments() []cluster.PartitionReassignment
}

// Handlers serves the cluster APIs of one broker.
type Handlers struct {
	authz  *acl.Authorizer
	meta   cluster.Metadata
	logger *slog.Logger
}

// New returns the cluster APIs over cfg. It only keeps cfg: the broker may
// build them before it serves.
func New(cfg Config) *Handlers {
	return &Handlers{authz: cfg.Authz, meta: cfg.Metadata, logger: cfg.Logger}
}

// apis are this package's APIs, each declared in its file's init.
var apis kafkaapi.APIs[*Handlers]

// add declares, from an API file's init, that h serves key in versions
// min..max with serve(h).
func add(key, min, max int16, serve func(*Handlers) kafkaapi.Serve) { apis.Add(key, min, max, serve) }

// Register adds every cluster API to r.
func (h *Handlers) Register(r *kafkaapi.Registry) {
	apis.Register(r, h)
}

// timeout bounds a request's wait for the controller: the client's
// timeout, at least a second.
func timeout(millis int32) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), max(time.Duration(millis)*time.Millisecond, time.Second))
}
