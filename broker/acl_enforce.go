package broker

// What each API checks when the authorizer is on, as Kafka checks it:
//
//	Produce            Write on the topic (produce.go, via internalRefusal)
//	Fetch              Read on the topic; a replica's (replica id >= 0)
//	                   ClusterAction on the cluster
//	OffsetForLeaderEpoch  Describe on the topic; a replica's ClusterAction
//	Metadata           Describe on the topic; auto-creation needs Create (metadata.go)
//	ListOffsets        Describe on the topic
//	CreateTopics       Create on the cluster or the topic
//	DeleteTopics       Delete on the topic (deletetopics.go, via internalRefusal)
//	DescribeConfigs    DescribeConfigs on the topic, or the cluster for a broker
//	Join/Sync/Heartbeat/LeaveGroup, OffsetCommit
//	                   Read on the group (OffsetCommit also Read on each topic)
//	OffsetFetch        Describe on the group
//	FindCoordinator    Describe on the group
//	DescribeGroups     Describe on the group; DeleteGroups Delete on the group
//	ConsumerGroupHeartbeat  Read on the group; ConsumerGroupDescribe
//	                   Describe on each group (in their own files)
//	ListGroups         Describe on the cluster, else only groups it may Describe
//	InitProducerId     IdempotentWrite on the cluster, or Write on some topic
//	Create/DeleteAcls, AlterUserScramCredentials     Alter on the cluster
//	DescribeAcls, DescribeUserScramCredentials       Describe on the cluster
//	the admin APIs                                   see acl_admin.go
//
// A refused request gets TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED where
// its answer has room for it. A Fetch naming both allowed and refused topics
// is served for the allowed ones only: clients learn of the refusal from
// Metadata, which they ask first.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterResource is the name of the one cluster resource.
const clusterResource = "kafka-cluster"

// may reports whether the client of req may do op on the resource; always
// true without an authorizer.
func (b *Broker) may(req *request, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	return b.authz == nil || b.authz.Allowed(req.principal, req.host, op, typ, name)
}

func (b *Broker) mayCluster(req *request, op kmsg.ACLOperation) bool {
	return b.may(req, op, kmsg.ACLResourceTypeCluster, clusterResource)
}

func (b *Broker) mayCreateTopic(req *request, topic string) bool {
	return b.mayCluster(req, kmsg.ACLOperationCreate) || b.may(req, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, topic)
}

// authorize checks req before its handler runs. It answers a refused
// request itself (non-nil), or trims what the client may not touch from
// the request and lets the handler answer the rest (nil).
func (b *Broker) authorize(req *request) *pending {
	topic := func(op kmsg.ACLOperation, name string) bool {
		return b.may(req, op, kmsg.ACLResourceTypeTopic, name)
	}
	group := func(op kmsg.ACLOperation, name string) bool {
		return b.may(req, op, kmsg.ACLResourceTypeGroup, name)
	}
	refuse := func(resp kmsg.Response) *pending { return ready(encode(req, resp)) }
	clusterCode := kerr.ClusterAuthorizationFailed.Code
	groupCode := kerr.GroupAuthorizationFailed.Code

	switch r := req.Request.(type) {
	case *kmsg.FetchRequest:
		if r.ReplicaID >= 0 {
			// A replica's fetch moves the high watermark and the ISR:
			// only brokers may send one.
			if b.mayCluster(req, kmsg.ACLOperationClusterAction) {
				break
			}
			var refused []fetchTopic
			for _, t := range r.Topics {
				ft := fetchTopic{name: t.Topic}
				for _, p := range t.Partitions {
					ft.partitions = append(ft.partitions, fetchPartition{partition: p.Partition,
						errorCode: clusterCode, highWatermark: -1, logStart: -1})
				}
				refused = append(refused, ft)
			}
			return ready(newFetchResponse(req, refused))
		}
		kept := r.Topics[:0:0]
		var refused []fetchTopic
		for _, t := range r.Topics {
			if topic(kmsg.ACLOperationRead, t.Topic) {
				kept = append(kept, t)
				continue
			}
			ft := fetchTopic{name: t.Topic}
			for _, p := range t.Partitions {
				ft.partitions = append(ft.partitions, fetchPartition{partition: p.Partition,
					errorCode: kerr.TopicAuthorizationFailed.Code, highWatermark: -1, logStart: -1})
			}
			refused = append(refused, ft)
		}
		if len(kept) == 0 && len(refused) > 0 {
			return ready(newFetchResponse(req, refused))
		}
		r.Topics = kept

	case *kmsg.ListOffsetsRequest:
		kept, refused := splitRefused(r.Topics, func(t kmsg.ListOffsetsRequestTopic) (kmsg.ListOffsetsResponseTopic, bool) {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt, topic(kmsg.ACLOperationDescribe, t.Topic)
		})
		if len(refused) > 0 {
			r.Topics = kept
			resp := b.listOffsets(r)
			resp.Topics = append(resp.Topics, refused...)
			return refuse(resp)
		}

	case *kmsg.CreateTopicsRequest:
		kept, refused := splitRefused(r.Topics, func(t kmsg.CreateTopicsRequestTopic) (kmsg.CreateTopicsResponseTopic, bool) {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			return rt, b.mayCreateTopic(req, t.Topic)
		})
		if len(refused) > 0 {
			r.Topics = kept
			resp := b.createTopics(r)
			resp.Topics = append(resp.Topics, refused...)
			return refuse(resp)
		}

	case *kmsg.DescribeConfigsRequest:
		kept := r.Resources[:0:0]
		var refused []kmsg.DescribeConfigsResponseResource
		for _, res := range r.Resources {
			ok := true
			switch res.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				ok = topic(kmsg.ACLOperationDescribeConfigs, res.ResourceName)
			case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
				ok = b.mayCluster(req, kmsg.ACLOperationDescribeConfigs)
			}
			if ok {
				kept = append(kept, res)
				continue
			}
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			rr.ErrorCode = kerr.TopicAuthorizationFailed.Code
			if res.ResourceType != kmsg.ConfigResourceTypeTopic {
				rr.ErrorCode = clusterCode
			}
			refused = append(refused, rr)
		}
		if len(refused) > 0 {
			r.Resources = kept
			resp := b.describeConfigs(r)
			resp.Resources = append(resp.Resources, refused...)
			return refuse(resp)
		}

	case *kmsg.JoinGroupRequest:
		if !group(kmsg.ACLOperationRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode = groupCode
			return refuse(resp)
		}
	case *kmsg.SyncGroupRequest:
		if !group(kmsg.ACLOperationRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode = groupCode
			return refuse(resp)
		}
	case *kmsg.HeartbeatRequest:
		if !group(kmsg.ACLOperationRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = groupCode
			return refuse(resp)
		}
	case *kmsg.LeaveGroupRequest:
		if !group(kmsg.ACLOperationRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = groupCode
			return refuse(resp)
		}

	case *kmsg.OffsetCommitRequest:
		groupOK := group(kmsg.ACLOperationRead, r.Group)
		kept := r.Topics[:0:0]
		var refused []kmsg.OffsetCommitResponseTopic
		for _, t := range r.Topics {
			code := int16(0)
			switch {
			case !groupOK:
				code = groupCode
			case !topic(kmsg.ACLOperationRead, t.Topic):
				code = kerr.TopicAuthorizationFailed.Code
			}
			if code == 0 {
				kept = append(kept, t)
				continue
			}
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
		}
		if len(refused) > 0 {
			var resp *kmsg.OffsetCommitResponse
			if r.Topics = kept; len(kept) > 0 {
				resp = b.offsetCommit(r)
			} else {
				resp = r.ResponseKind().(*kmsg.OffsetCommitResponse)
			}
			resp.Topics = append(resp.Topics, refused...)
			return refuse(resp)
		}

	case *kmsg.OffsetFetchRequest:
		groups := []string{r.Group}
		if r.Version >= 8 {
			groups = groups[:0]
			for _, g := range r.Groups {
				groups = append(groups, g.Group)
			}
		}
		for _, g := range groups {
			if !group(kmsg.ACLOperationDescribe, g) {
				resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
				resp.ErrorCode = groupCode
				for _, g := range groups {
					rg := kmsg.NewOffsetFetchResponseGroup()
					rg.Group, rg.ErrorCode = g, groupCode
					resp.Groups = append(resp.Groups, rg)
				}
				return refuse(resp)
			}
		}

	case *kmsg.FindCoordinatorRequest:
		keys := r.CoordinatorKeys
		if r.Version < 4 {
			keys = []string{r.CoordinatorKey}
		}
		for _, k := range keys {
			typ := kmsg.ACLResourceTypeGroup
			if r.CoordinatorType == 1 {
				typ = kmsg.ACLResourceTypeTransactionalId
			}
			if !b.may(req, kmsg.ACLOperationDescribe, typ, k) {
				resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
				resp.ErrorCode = groupCode
				for _, k := range keys {
					c := kmsg.NewFindCoordinatorResponseCoordinator()
					c.Key, c.ErrorCode, c.NodeID = k, groupCode, -1
					resp.Coordinators = append(resp.Coordinators, c)
				}
				resp.NodeID = -1
				return refuse(resp)
			}
		}

	case *kmsg.DescribeGroupsRequest:
		kept := r.Groups[:0:0]
		var refused []kmsg.DescribeGroupsResponseGroup
		for _, g := range r.Groups {
			if group(kmsg.ACLOperationDescribe, g) {
				kept = append(kept, g)
				continue
			}
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, groupCode
			refused = append(refused, rg)
		}
		if len(refused) > 0 {
			r.Groups = kept
			return later(func() response {
				resp := b.describeGroups(r)
				resp.Groups = append(resp.Groups, refused...)
				return encode(req, resp)
			})
		}

	case *kmsg.ListGroupsRequest:
		if !b.mayCluster(req, kmsg.ACLOperationDescribe) {
			return later(func() response {
				resp := b.listGroups(r)
				kept := resp.Groups[:0]
				for _, g := range resp.Groups {
					if group(kmsg.ACLOperationDescribe, g.Group) {
						kept = append(kept, g)
					}
				}
				resp.Groups = kept
				return encode(req, resp)
			})
		}

	case *kmsg.DeleteGroupsRequest:
		kept, refused := splitRefused(r.Groups, func(g string) (kmsg.DeleteGroupsResponseGroup, bool) {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, groupCode
			return rg, group(kmsg.ACLOperationDelete, g)
		})
		if len(refused) > 0 {
			r.Groups = kept
			resp := b.deleteGroups(r)
			resp.Groups = append(resp.Groups, refused...)
			return refuse(resp)
		}

	case *kmsg.InitProducerIDRequest:
		if r.TransactionalID == nil && !b.mayCluster(req, kmsg.ACLOperationIdempotentWrite) && !b.authz.MayWriteSomeTopic(req.principal, req.host) {
			resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
			resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = clusterCode, -1, -1
			return refuse(resp)
		}

	case *kmsg.ElectLeadersRequest:
		if !b.mayCluster(req, kmsg.ACLOperationAlter) {
			resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
			resp.ErrorCode = clusterCode
			return refuse(resp)
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		if !b.mayCluster(req, kmsg.ACLOperationAlter) {
			resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
			resp.ErrorCode = clusterCode
			return refuse(resp)
		}
	case *kmsg.ListPartitionReassignmentsRequest:
		if !b.mayCluster(req, kmsg.ACLOperationDescribe) {
			resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
			resp.ErrorCode = clusterCode
			return refuse(resp)
		}
	case *kmsg.CreateACLsRequest:
		if !b.mayCluster(req, kmsg.ACLOperationAlter) {
			resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
			for range r.Creations {
				res := kmsg.NewCreateACLsResponseResult()
				res.ErrorCode = clusterCode
				resp.Results = append(resp.Results, res)
			}
			return refuse(resp)
		}
	case *kmsg.DeleteACLsRequest:
		if !b.mayCluster(req, kmsg.ACLOperationAlter) {
			resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
			for range r.Filters {
				res := kmsg.NewDeleteACLsResponseResult()
				res.ErrorCode = clusterCode
				resp.Results = append(resp.Results, res)
			}
			return refuse(resp)
		}
	case *kmsg.DescribeACLsRequest:
		if !b.mayCluster(req, kmsg.ACLOperationDescribe) {
			resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
			resp.ErrorCode = clusterCode
			return refuse(resp)
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		if !b.mayCluster(req, kmsg.ACLOperationAlter) {
			resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
			for _, d := range r.Deletions {
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode = d.Name, clusterCode
				resp.Results = append(resp.Results, res)
			}
			for _, u := range r.Upsertions {
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode = u.Name, clusterCode
				resp.Results = append(resp.Results, res)
			}
			return refuse(resp)
		}
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		if !b.mayCluster(req, kmsg.ACLOperationDescribe) {
			resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
			resp.ErrorCode = clusterCode
			return refuse(resp)
		}
	}
	return b.authorizeAdmin(req)
}
