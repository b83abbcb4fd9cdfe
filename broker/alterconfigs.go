package broker

// IncrementalAlterConfigs and AlterConfigs.
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
// (dynamicconfig.go).

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/internaltopic"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	register(44, 0, 1, async((*Broker).incrementalAlterConfigs))
	register(33, 0, 2, async((*Broker).alterConfigs))
}

// Kafka's IncrementalAlterConfigs operations.
const (
	opSet      = 0
	opDelete   = 1
	opAppend   = 2
	opSubtract = 3
)

func (b *Broker) incrementalAlterConfigs(who *request, req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	var refused []kmsg.IncrementalAlterConfigsResponseResource
	req.Resources, refused = filterAuthorized(req.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) bool {
		_, ok := b.mayConfig(who, kmsg.ACLOperationAlterConfigs, res.ResourceType, res.ResourceName)
		return ok
	}, func(it kmsg.IncrementalAlterConfigsRequestResource) kmsg.IncrementalAlterConfigsResponseResource {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ErrorCode, _ = b.mayConfig(who, kmsg.ACLOperationAlterConfigs, it.ResourceType, it.ResourceName)
		rr.ResourceType, rr.ResourceName = it.ResourceType, it.ResourceName
		return rr
	})
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		keys := configKeysOf(rr.ResourceType)
		err := b.alterResource(rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(cur map[string]string) (map[string]string, error) {
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

func (b *Broker) alterConfigs(who *request, req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	var refused []kmsg.AlterConfigsResponseResource
	req.Resources, refused = filterAuthorized(req.Resources, func(res kmsg.AlterConfigsRequestResource) bool {
		_, ok := b.mayConfig(who, kmsg.ACLOperationAlterConfigs, res.ResourceType, res.ResourceName)
		return ok
	}, func(it kmsg.AlterConfigsRequestResource) kmsg.AlterConfigsResponseResource {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ErrorCode, _ = b.mayConfig(who, kmsg.ACLOperationAlterConfigs, it.ResourceType, it.ResourceName)
		rr.ResourceType, rr.ResourceName = it.ResourceType, it.ResourceName
		return rr
	})
	resp := kmsg.NewPtrAlterConfigsResponse()
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := b.alterResource(rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(map[string]string) (map[string]string, error) {
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
		return func(string) (kmsg.ConfigType, string, error) { return kmsg.ConfigTypeString, "", nil } // names checked by alterBrokerLogger
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
// current ones, after checking the result.
func (b *Broker) alterResource(typ kmsg.ConfigResourceType, name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		if err := b.checkBrokerResource(name); err != nil {
			return err
		}
		return b.alterBrokerConfigs(name, validateOnly, change)
	case kmsg.ConfigResourceTypeBrokerLogger:
		return b.alterBrokerLogger(name, validateOnly, change)
	default:
		return kafkaerr.New(kerr.InvalidRequest, "Tributary alters topic, broker and broker logger configs only")
	}
	t, ok := b.meta.Topic(name)
	if !ok {
		return kafkaerr.New(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	next, err := change(t.Configs)
	if err != nil {
		return err
	}
	if next, err = internaltopic.Configs(name, next); err != nil {
		return err
	}
	if err := topicconfig.Check(next); err != nil {
		return kafkaerr.New(kerr.InvalidConfig, "topic %s: %v", name, err)
	}
	if err := b.checkTopicConfigBounds(next, replicasOf(t.Replicas)); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t, err = b.meta.SetTopicConfigs(ctx, name, next)
	switch {
	case errors.Is(err, cluster.ErrUnknownTopic):
		return kafkaerr.New(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	case err != nil:
		b.logger.Error("storing topic configs", "topic", name, "err", err)
		return kafkaerr.New(kerr.UnknownServerError, "storing configs of topic %s: %v", name, err)
	}
	b.reconfigureTopic(t)
	b.logger.Info("topic configs changed", "topic", name, "configs", next)
	return nil
}

// reconfigureTopic applies a topic's current configs, over the broker's
// current defaults, to its open partitions.
func (b *Broker) reconfigureTopic(t cluster.Topic) {
	b.dyn.applyMu.Lock()
	defer b.dyn.applyMu.Unlock()
	cfg, err := topicconfig.LogConfig(b.brokerTopicDefaults().Log, t.Configs)
	if err != nil {
		b.logger.Error("topic configs cannot be applied; partitions keep their settings", "topic", t.Name, "err", err)
		return
	}
	for _, l := range b.logs.OpenLogsOf(t.Name) {
		l.Reconfigure(cfg)
	}
}

// reconfigureAll applies every topic's configs to its open partitions: run
// on each change of the cluster view, which is how a change made through
// another broker of a cluster reaches this one.
func (b *Broker) reconfigureAll() {
	for _, t := range b.meta.Topics() {
		b.reconfigureTopic(t)
	}
}

// produceLimits are the per-topic settings Produce checks and applies.
type produceLimits struct {
	maxMessageBytes int32
	logAppendTime   bool
	recompress      bool      // store batches in codec (compression.type)
	codec           log.Codec // the topic's codec when recompress is set
}

// produceLimitsFor reads them from the topic's settings, the broker's
// defaults (compression.type included) where the topic sets nothing.
func (b *Broker) produceLimitsFor(t cluster.Topic) produceLimits {
	s := b.topicSettingsOf(t.Configs)
	codec, recompress := s.Log.Compression.Codec()
	return produceLimits{maxMessageBytes: s.MaxMessageBytes, logAppendTime: s.LogAppendTime, recompress: recompress, codec: codec}
}
