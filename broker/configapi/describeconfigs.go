package configapi

// DescribeConfigs (key 32), versions 0-4.
//
// Topics report the effective value of every topic setting with its
// source: the topic's own value (DYNAMIC_TOPIC_CONFIG), a dynamic broker
// config (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG), a broker
// flag (STATIC_BROKER_CONFIG) or the built-in default (DEFAULT_CONFIG). A
// broker (resource name: its id) reports its settings under Kafka's names
// the same way, the dynamic ones writable and the rest read-only; the
// resource "" (the cluster-wide default) reports the dynamic defaults set,
// as Kafka does. A broker's loggers (BROKER_LOGGER) report the log level.
// Synonyms, when asked for, list every level's value, highest precedence
// first. Documentation is not sent. Describing needs DescribeConfigs on the
// topic, or on the cluster for a broker or its loggers.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/kafkaerr"
)

func init() {
	add(32, 0, 4, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.describeConfigs) })
}

func (h *Handlers) describeConfigs(who *kafkaapi.Request, req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	var refused []kmsg.DescribeConfigsResponseResource
	req.Resources, refused = acl.Filter(req.Resources, func(res kmsg.DescribeConfigsRequestResource) bool {
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			return h.authz.MayTopic(who.Who, kmsg.ACLOperationDescribeConfigs, res.ResourceName)
		case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
			return h.authz.MayCluster(who.Who, kmsg.ACLOperationDescribeConfigs)
		}
		return true
	}, func(it kmsg.DescribeConfigsRequestResource) kmsg.DescribeConfigsResponseResource {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = it.ResourceType, it.ResourceName
		rr.ErrorCode = acl.TopicRefused
		if it.ResourceType != kmsg.ConfigResourceTypeTopic {
			rr.ErrorCode = acl.ClusterRefused
		}
		return rr
	})
	resp := kmsg.NewPtrDescribeConfigsResponse()
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []Entry
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			var code int16
			var err error
			entries, code, err = h.settings.TopicConfigs(rr.ResourceName)
			if code != 0 {
				sr.ErrorCode = code
				break
			}
			if err != nil {
				sr.ErrorCode = kerr.InvalidConfig.Code
				msg := err.Error()
				sr.ErrorMessage = &msg
			}
		case kmsg.ConfigResourceTypeBroker:
			var err error
			if entries, err = h.settings.BrokerConfigs(rr.ResourceName); err != nil {
				sr.ErrorCode = kafkaerr.Code(err)
				msg := err.Error()
				sr.ErrorMessage = &msg
			}
		case kmsg.ConfigResourceTypeBrokerLogger:
			var err error
			if entries, err = h.settings.LoggerConfigs(rr.ResourceName); err != nil {
				sr.ErrorCode = kafkaerr.Code(err)
				msg := err.Error()
				sr.ErrorMessage = &msg
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			msg := "Tributary describes topic, broker and broker logger configs only"
			sr.ErrorMessage = &msg
		}
		want := wantedNames(rr.ConfigNames)
		for _, e := range entries {
			if !want(e.Name) {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.ConfigType, rc.Source, rc.ReadOnly = e.Name, e.Type, e.Source, e.ReadOnly
			v := e.Value
			rc.Value = &v
			rc.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
			if req.IncludeSynonyms {
				rc.ConfigSynonyms = e.Synonyms
			}
			sr.Configs = append(sr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	resp.Resources = append(resp.Resources, refused...)
	return resp
}

// wantedNames filters by the names a request lists; nil lists all.
func wantedNames(names []string) func(string) bool {
	if names == nil {
		return func(string) bool { return true }
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	return func(n string) bool { return want[n] }
}
