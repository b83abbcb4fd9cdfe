package broker

// ACL checks of the admin APIs, as Kafka checks them when the authorizer is
// on (the rest are in acl_enforce.go):
//
//	AlterConfigs, IncrementalAlterConfigs   AlterConfigs on the topic, or the cluster for a broker
//	CreatePartitions                        Alter on the topic
//	DeleteRecords                           Delete on the topic
//	OffsetDelete                            Delete on the group, and Read on each topic
//	DescribeLogDirs                         Describe on the cluster
//
// Refused resources are answered with their authorization error; the
// allowed ones of the same request are served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) authorizeAdmin(req *request) *pending {
	topicOK := func(op kmsg.ACLOperation, name string) bool {
		return b.may(req, op, kmsg.ACLResourceTypeTopic, name)
	}
	configOK := func(typ kmsg.ConfigResourceType, name string) (int16, bool) {
		if typ == kmsg.ConfigResourceTypeTopic {
			return kerr.TopicAuthorizationFailed.Code, topicOK(kmsg.ACLOperationAlterConfigs, name)
		}
		return kerr.ClusterAuthorizationFailed.Code, b.mayCluster(req, kmsg.ACLOperationAlterConfigs)
	}
	switch r := req.Request.(type) {
	case *kmsg.AlterConfigsRequest:
		kept, refused := splitRefused(r.Resources, func(res kmsg.AlterConfigsRequestResource) (kmsg.AlterConfigsResponseResource, bool) {
			rr := kmsg.NewAlterConfigsResponseResource()
			code, ok := configOK(res.ResourceType, res.ResourceName)
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			return rr, ok
		})
		if len(refused) > 0 {
			r.Resources = kept
			return later(func() response {
				resp := b.alterConfigs(r)
				resp.Resources = append(resp.Resources, refused...)
				return encode(req, resp)
			})
		}

	case *kmsg.IncrementalAlterConfigsRequest:
		kept, refused := splitRefused(r.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) (kmsg.IncrementalAlterConfigsResponseResource, bool) {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			code, ok := configOK(res.ResourceType, res.ResourceName)
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			return rr, ok
		})
		if len(refused) > 0 {
			r.Resources = kept
			return later(func() response {
				resp := b.incrementalAlterConfigs(r)
				resp.Resources = append(resp.Resources, refused...)
				return encode(req, resp)
			})
		}

	case *kmsg.CreatePartitionsRequest:
		kept, refused := splitRefused(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) (kmsg.CreatePartitionsResponseTopic, bool) {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			return rt, topicOK(kmsg.ACLOperationAlter, t.Topic)
		})
		if len(refused) > 0 {
			r.Topics = kept
			return later(func() response {
				resp := b.createPartitions(r)
				resp.Topics = append(resp.Topics, refused...)
				return encode(req, resp)
			})
		}

	case *kmsg.DeleteRecordsRequest:
		kept, refused := splitRefused(r.Topics, func(t kmsg.DeleteRecordsRequestTopic) (kmsg.DeleteRecordsResponseTopic, bool) {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.LowWatermark, rp.ErrorCode = p.Partition, -1, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt, topicOK(kmsg.ACLOperationDelete, t.Topic)
		})
		if len(refused) > 0 {
			r.Topics = kept
			return later(func() response {
				resp := b.deleteRecords(r)
				resp.Topics = append(resp.Topics, refused...)
				return encode(req, resp)
			})
		}

	case *kmsg.OffsetDeleteRequest:
		resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		if !b.may(req, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, r.Group) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return ready(encode(req, resp))
		}
		refusedAny := false
		for _, t := range r.Topics {
			ok := topicOK(kmsg.ACLOperationRead, t.Topic)
			refusedAny = refusedAny || !ok
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition = p.Partition
				if !ok {
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if refusedAny {
			// Nothing is deleted: an offset delete is one group operation.
			return ready(encode(req, resp))
		}

	case *kmsg.DescribeLogDirsRequest:
		if !b.mayCluster(req, kmsg.ACLOperationDescribe) {
			resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return ready(encode(req, resp))
		}
	}
	return nil
}

// splitRefused splits a request's resources into those check allows and
// the answers (built by check) for the others, so a request is served for
// what it may touch and answered with an error for the rest.
func splitRefused[Req, Resp any](items []Req, check func(Req) (Resp, bool)) (kept []Req, refused []Resp) {
	kept = items[:0:0]
	for _, it := range items {
		if answer, ok := check(it); ok {
			kept = append(kept, it)
		} else {
			refused = append(refused, answer)
		}
	}
	return kept, refused
}
