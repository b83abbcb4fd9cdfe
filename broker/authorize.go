package broker

// Authorization: every handler asks broker/acl's helper (helper.go there,
// as Kafka's AuthHelper) in its own file, beside its versions. These are
// its names in the root, taking the root's request; a handler package
// calls the helper directly with its kafkaapi.Request's Who.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
)

// The codes of a refusal.
var (
	topicRefused   = acl.TopicRefused
	clusterRefused = acl.ClusterRefused
)

// who is the client of req, as the helper asks about it.
func (req *request) who() acl.Who { return acl.Who{Principal: req.principal, Host: req.host} }

func (b *Broker) mayTopic(req *request, op kmsg.ACLOperation, topic string) bool {
	return b.authz.MayTopic(req.who(), op, topic)
}

func (b *Broker) mayCluster(req *request, op kmsg.ACLOperation) bool {
	return b.authz.MayCluster(req.who(), op)
}

func (b *Broker) mayCreateTopic(req *request, topic string) bool {
	return b.authz.MayCreateTopic(req.who(), topic)
}

// topicRefusal is acl.Authorizer.TopicRefusal for the client of req.
func (b *Broker) topicRefusal(req *request, op kmsg.ACLOperation, action, topic string) string {
	return b.authz.TopicRefusal(req.who(), op, action, topic)
}

// filterAuthorized is acl.Filter.
func filterAuthorized[Req, Resp any](items []Req, allowed func(Req) bool, refuse func(Req) Resp) (kept []Req, refused []Resp) {
	return acl.Filter(items, allowed, refuse)
}
