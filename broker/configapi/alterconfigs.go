package configapi

// IncrementalAlterConfigs (key 44), versions 0-1, and AlterConfigs (key
// 33), versions 0-2.
//
// Topic configs change at run time: the new set is checked as CreateTopics
// checks it (an unknown key or unsupported value fails the resource with
// INVALID_CONFIG naming the key), stored in the cluster metadata (the data
// directory, or /config/topics/<t> in ZooKeeper, which every broker
// watches), and applied to the topic's open partitions without a restart.
// IncrementalAlterConfigs sets, deletes (back to the broker's value),
// appends to or subtracts from list values; AlterConfigs replaces the whole
// set. validate_only checks without storing. BROKER resources ("" for the
// cluster-wide default, or a broker id) change the dynamic broker configs
// (broker/brokerconfig), BROKER_LOGGER ones the log level. Settings checks,
// stores and applies each change; here each request is authorized
// (AlterConfigs on the topic, or on the cluster) and its operations turned
// into the new set.

import (
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/topicconfig"
)

func init() {
	add(44, 0, 1, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.incrementalAlterConfigs) })
	add(33, 0, 2, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.alterConfigs) })
}

// Kafka's IncrementalAlterConfigs operations.
const (
	opSet      = 0
	opDelete   = 1
	opAppend   = 2
	opSubtract = 3
)

func (h *Handlers) incrementalAlterConfigs(who *kafkaapi.Request, req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	var refused []kmsg.IncrementalAlterConfigsResponseResource
	req.Resources, refused = acl.Filter(req.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) bool {
		_, ok := h.authz.MayConfig(who.Who, kmsg.ACLOperationAlterConfigs, res.ResourceType, res.ResourceName)
		return ok
	}, func(it kmsg.IncrementalAlterConfigsRequestResource) kmsg.IncrementalAlterConfigsResponseResource {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ErrorCode, _ = h.authz.MayConfig(who.Who, kmsg.ACLOperationAlterConfigs, it.ResourceType, it.ResourceName)
		rr.ResourceType, rr.ResourceName = it.ResourceType, it.ResourceName
		return rr
	})
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		keys := configKeysOf(rr.ResourceType)
		err := h.alterResource(rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(cur map[string]string) (map[string]string, error) {
			next := maps.Clone(cur)
			if next == nil {
				next = map[string]string{}
			}
			for _, c := range rr.Configs {
				if err := applyConfigOp(next, c.Name, int8(c.Op), c.Value, keys); err != nil {
					return nil, err
				}
			}
			return next, nil
		})
		if err != nil {
			sr.ErrorCode = kafkaerr.Code(err)
			msg := err.Error()
			sr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, sr)
	}
	resp.Resources = append(resp.Resources, refused...)
	return resp
}

func (h *Handlers) alterConfigs(who *kafkaapi.Request, req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	var refused []kmsg.AlterConfigsResponseResource
	req.Resources, refused = acl.Filter(req.Resources, func(res kmsg.AlterConfigsRequestResource) bool {
		_, ok := h.authz.MayConfig(who.Who, kmsg.ACLOperationAlterConfigs, res.ResourceType, res.ResourceName)
		return ok
	}, func(it kmsg.AlterConfigsRequestResource) kmsg.AlterConfigsResponseResource {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ErrorCode, _ = h.authz.MayConfig(who.Who, kmsg.ACLOperationAlterConfigs, it.ResourceType, it.ResourceName)
		rr.ResourceType, rr.ResourceName = it.ResourceType, it.ResourceName
		return rr
	})
	resp := kmsg.NewPtrAlterConfigsResponse()
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := h.alterResource(rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(map[string]string) (map[string]string, error) {
			next := map[string]string{}
			for _, c := range rr.Configs {
				if c.Value != nil {
					next[c.Name] = *c.Value
				}
			}
			return next, nil
		})
		if err != nil {
			sr.ErrorCode = kafkaerr.Code(err)
			msg := err.Error()
			sr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, sr)
	}
	resp.Resources = append(resp.Resources, refused...)
	return resp
}

// configKey says what a resource's key is: its type and the value a list
// starts from when APPEND or SUBTRACT change it unset; an error for a key
// the resource does not take.
type configKey func(name string) (typ kmsg.ConfigType, unset string, err error)

func configKeysOf(typ kmsg.ConfigResourceType) configKey {
	if typ == kmsg.ConfigResourceTypeBrokerLogger {
		return func(string) (kmsg.ConfigType, string, error) { return kmsg.ConfigTypeString, "", nil } // names checked by Settings.AlterLoggerConfigs
	}
	if typ == kmsg.ConfigResourceTypeBroker {
		return func(name string) (kmsg.ConfigType, string, error) {
			d, ok := brokerconfig.Of(name)
			if !ok {
				return 0, "", brokerconfig.ErrStatic(name)
			}
			return d.Type, d.Get(brokerconfig.Builtin()), nil
		}
	}
	return func(name string) (kmsg.ConfigType, string, error) {
		typ, ok := topicconfig.Type(name)
		if !ok {
			return 0, "", kafkaerr.New(kerr.InvalidConfig, "unknown topic config %q (supported: %s)", name, topicconfig.Supported())
		}
		return typ, topicconfig.Get(topicconfig.Settings{}, name), nil
	}
}

// applyConfigOp applies one IncrementalAlterConfigs operation to configs.
func applyConfigOp(configs map[string]string, name string, op int8, value *string, keys configKey) error {
	typ, unset, err := keys(name)
	if err != nil {
		return err
	}
	v := ""
	if value != nil {
		v = *value
	}
	switch op {
	case opSet:
		if value == nil {
			return kafkaerr.New(kerr.InvalidConfig, "config %s: SET needs a value", name)
		}
		configs[name] = v
	case opDelete:
		delete(configs, name)
	case opAppend, opSubtract:
		if typ != kmsg.ConfigTypeList {
			return kafkaerr.New(kerr.InvalidConfig, "config %s is not a list: APPEND and SUBTRACT apply to list configs only", name)
		}
		cur, ok := configs[name]
		if !ok {
			cur = unset
		}
		var items []string
		for _, it := range strings.Split(cur, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		for _, it := range strings.Split(v, ",") {
			it = strings.TrimSpace(it)
			switch {
			case it == "":
			case op == opAppend && !slices.Contains(items, it):
				items = append(items, it)
			case op == opSubtract:
				items = slices.DeleteFunc(items, func(s string) bool { return s == it })
			}
		}
		configs[name] = strings.Join(items, ",")
	default:
		return kafkaerr.New(kerr.InvalidRequest, "config %s: unknown operation %d", name, op)
	}
	return nil
}

// alterResource changes one resource's configs to what change makes of the
// current ones: Settings checks the result, stores and applies it.
func (h *Handlers) alterResource(typ kmsg.ConfigResourceType, name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return h.settings.AlterTopicConfigs(name, validateOnly, change)
	case kmsg.ConfigResourceTypeBroker:
		return h.settings.AlterBrokerConfigs(name, validateOnly, change)
	case kmsg.ConfigResourceTypeBrokerLogger:
		return h.settings.AlterLoggerConfigs(name, validateOnly, change)
	}
	return kafkaerr.New(kerr.InvalidRequest, "Tributary alters topic, broker and broker logger configs only")
}
