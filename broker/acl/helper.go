package acl

// The helper every handler asks, as Kafka's AuthHelper: a handler decides
// in its own file, beside its versions, whether its client may do what the
// request asks. May decides one resource; Filter splits a request's
// topics, groups or resources into those its client may touch, which the
// handler serves, and the answers for the others, which it appends to its
// response. A nil *Authorizer (no Config.Authorizer) allows everything.
//
// A refused request gets TOPIC_, GROUP_, TRANSACTIONAL_ID_ or
// CLUSTER_AUTHORIZATION_FAILED where its answer has room for it. The rule
// of each API is in its file:
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
//	InitProducerId              IdempotentWrite on the cluster, or Write on some topic;
//	                            with a transactional id, Write on it
//	the transaction APIs        Write on the transactional id (AddOffsetsToTxn also Read
//	                            on the group); Describe on it to describe or list it
//	the ACL, SCRAM, quota, reassignment and election APIs, DescribeLogDirs
//	                            Alter (or AlterConfigs) to change, Describe (or
//	                            DescribeConfigs) to read, on the cluster

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Who is the client a handler asks about: the principal of its
// connection (User:<name>) and its IP.
type Who struct {
	Principal string
	Host      string
}

// ClusterResource is the name of the one cluster resource.
const ClusterResource = "kafka-cluster"

// The codes of a refusal.
var (
	TopicRefused   = kerr.TopicAuthorizationFailed.Code
	GroupRefused   = kerr.GroupAuthorizationFailed.Code
	ClusterRefused = kerr.ClusterAuthorizationFailed.Code
	TxnRefused     = kerr.TransactionalIDAuthorizationFailed.Code
)

// May reports whether who may do op on the resource; always true for a
// nil z (no authorizer).
func (z *Authorizer) May(who Who, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	return z == nil || z.Allowed(who.Principal, who.Host, op, typ, name)
}

// MayTopic is May on a topic.
func (z *Authorizer) MayTopic(who Who, op kmsg.ACLOperation, topic string) bool {
	return z.May(who, op, kmsg.ACLResourceTypeTopic, topic)
}

// MayGroup is May on a group.
func (z *Authorizer) MayGroup(who Who, op kmsg.ACLOperation, group string) bool {
	return z.May(who, op, kmsg.ACLResourceTypeGroup, group)
}

// MayTxn is May on a transactional id.
func (z *Authorizer) MayTxn(who Who, op kmsg.ACLOperation, id string) bool {
	return z.May(who, op, kmsg.ACLResourceTypeTransactionalId, id)
}

// MayCluster is May on the cluster.
func (z *Authorizer) MayCluster(who Who, op kmsg.ACLOperation) bool {
	return z.May(who, op, kmsg.ACLResourceTypeCluster, ClusterResource)
}

// MayCreateTopic reports whether who may create topic: Create on the
// cluster or on the topic.
func (z *Authorizer) MayCreateTopic(who Who, topic string) bool {
	return z.MayCluster(who, kmsg.ACLOperationCreate) || z.MayTopic(who, kmsg.ACLOperationCreate, topic)
}

// MayConfig decides an alter or describe (op) of a config resource: a
// topic's on the topic, a broker's or broker logger's on the cluster. It
// returns the code of a refusal with the decision.
func (z *Authorizer) MayConfig(who Who, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) (int16, bool) {
	if typ == kmsg.ConfigResourceTypeTopic {
		return TopicRefused, z.MayTopic(who, op, name)
	}
	return ClusterRefused, z.MayCluster(who, op)
}

// TopicRefusal says why who may not do op (action, in words) on topic, or
// "" when it may.
func (z *Authorizer) TopicRefusal(who Who, op kmsg.ACLOperation, action, topic string) string {
	if z.MayTopic(who, op, topic) {
		return ""
	}
	return fmt.Sprintf("principal %s may not %s topic %s: no ACL allows %v on it", who.Principal, action, topic, op)
}

// Filter splits a request's items into those allowed lets through and the
// answers refuse builds for the others, so a request is served for what
// its client may touch and refused for the rest. When everything is
// allowed (always without an authorizer) items comes back as it is, with
// nothing allocated; otherwise kept is a copy, never items written over.
func Filter[Req, Resp any](items []Req, allowed func(Req) bool, refuse func(Req) Resp) (kept []Req, refused []Resp) {
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
