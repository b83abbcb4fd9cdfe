package broker

// Authorization, as Kafka's AuthHelper: every handler asks here, in its own
// file beside its versions, whether its client may do what the request
// asks. may decides one resource; filterAuthorized splits a request's
// topics, groups or resources into those its client may touch, which the
// handler serves, and the answers for the others, which it appends to its
// response. What an ACL allows (deny wins, implied operations, super users,
// the in-process principal) is broker/acl's; without Config.Authorizer
// everything is allowed.
//
// A refused request gets TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED where
// its answer has room for it. The rule of each API is in its file:
//
//	Produce, DeleteTopics       Write, Delete on the topic
//	Fetch                       Read on the topic; a replica's ClusterAction on the cluster
//	ListOffsets, Metadata       Describe on the topic (Metadata's auto-creation: Create)
//	OffsetForLeaderEpoch        Describe on the topic; a replica's ClusterAction
//	CreateTopics                Create on the cluster or the topic
//	CreatePartitions            Alter on the topic; DeleteRecords Delete on the topic
//	Describe/AlterConfigs       (Describe|Alter)Configs on the topic, or the cluster for a broker
//	the group APIs              Read on the group (OffsetCommit also Read on each topic);
//	                            Describe to describe or find it, Delete to delete it
//	ListGroups                  Describe on the cluster, else the groups it may Describe
//	InitProducerId              IdempotentWrite on the cluster, or Write on some topic
//	the ACL, SCRAM, quota, reassignment and election APIs, DescribeLogDirs
//	                            Alter (or AlterConfigs) to change, Describe (or
//	                            DescribeConfigs) to read, on the cluster

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterResource is the name of the one cluster resource.
const clusterResource = "kafka-cluster"

// The codes of a refusal.
var (
	topicRefused   = kerr.TopicAuthorizationFailed.Code
	groupRefused   = kerr.GroupAuthorizationFailed.Code
	clusterRefused = kerr.ClusterAuthorizationFailed.Code
)

// may reports whether the client of req may do op on the resource; always
// true without an authorizer.
func (b *Broker) may(req *request, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	return b.authz == nil || b.authz.Allowed(req.principal, req.host, op, typ, name)
}

func (b *Broker) mayTopic(req *request, op kmsg.ACLOperation, topic string) bool {
	return b.may(req, op, kmsg.ACLResourceTypeTopic, topic)
}

func (b *Broker) mayGroup(req *request, op kmsg.ACLOperation, group string) bool {
	return b.may(req, op, kmsg.ACLResourceTypeGroup, group)
}

func (b *Broker) mayCluster(req *request, op kmsg.ACLOperation) bool {
	return b.may(req, op, kmsg.ACLResourceTypeCluster, clusterResource)
}

func (b *Broker) mayCreateTopic(req *request, topic string) bool {
	return b.mayCluster(req, kmsg.ACLOperationCreate) || b.mayTopic(req, kmsg.ACLOperationCreate, topic)
}

// mayConfig decides an alter or describe (op) of a config resource: a
// topic's on the topic, a broker's or broker logger's on the cluster. It
// returns the code of a refusal with the decision.
func (b *Broker) mayConfig(req *request, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) (int16, bool) {
	if typ == kmsg.ConfigResourceTypeTopic {
		return topicRefused, b.mayTopic(req, op, name)
	}
	return clusterRefused, b.mayCluster(req, op)
}

// topicRefusal says why the client of req may not do op (action, in words)
// on topic, or "" when it may.
func (b *Broker) topicRefusal(req *request, op kmsg.ACLOperation, action, topic string) string {
	if b.mayTopic(req, op, topic) {
		return ""
	}
	return fmt.Sprintf("principal %s may not %s topic %s: no ACL allows %v on it", req.principal, action, topic, op)
}

// filterAuthorized splits a request's items into those allowed lets
// through and the answers refuse builds for the others, so a request is
// served for what its client may touch and refused for the rest. When
// everything is allowed (always without an authorizer) items comes back
// as it is, with nothing allocated.
func filterAuthorized[Req, Resp any](items []Req, allowed func(Req) bool, refuse func(Req) Resp) (kept []Req, refused []Resp) {
	for i, it := range items {
		if allowed(it) {
			continue
		}
		kept = append(kept, items[:i]...)
		refused = append(refused, refuse(it))
		for _, it := range items[i+1:] {
			if allowed(it) {
				kept = append(kept, it)
			} else {
				refused = append(refused, refuse(it))
			}
		}
		if kept == nil {
			kept = items[:0:0]
		}
		return kept, refused
	}
	return items, nil
}
