package broker_test

import "github.com/tributary-io/tributary/internal/brokertest"

// The helpers this package's tests share with the tests of third-party
// clients (tests/compat), under the short names the tests here use.
var (
	newClient        = brokertest.NewClient
	newAdmin         = brokertest.NewAdmin
	createTopic      = brokertest.CreateTopic
	configsByName    = brokertest.ConfigsByName
	brokerConfigs    = brokertest.BrokerConfigs
	topicConfig      = brokertest.TopicConfig
	wantConfig       = brokertest.WantConfig
	describeQuotas   = brokertest.DescribeQuotas
	produceValues    = brokertest.ProduceValues
	produceSized     = brokertest.ProduceSized
	produceBatches   = brokertest.ProduceBatches
	randomBytes      = brokertest.RandomBytes
	consumeAll       = brokertest.ConsumeAll
	consumeIsolated  = brokertest.ConsumeIsolated
	storedBatches    = brokertest.StoredBatches
	storedCodecs     = brokertest.StoredCodecs
	fastGroups       = brokertest.FastGroups
	consumerGroups   = brokertest.ConsumerGroups
	startGroupBroker = brokertest.StartGroupBroker
	committed        = brokertest.Committed
	commitOffsets    = brokertest.CommitOffsets
	wantOffsets      = brokertest.WantOffsets
	startListeners   = brokertest.StartListeners
	startMember      = brokertest.StartMember
	setUser          = brokertest.SetUser
	withCertificate  = brokertest.WithCertificate
	roundTrip        = brokertest.RoundTrip
	rawRequest       = brokertest.RawRequest
	startTransformer = brokertest.StartTransformer
	checkCopiedOnce  = brokertest.CheckCopiedOnce
)
