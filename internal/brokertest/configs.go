package brokertest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerConfigs describes a broker resource: the cluster-wide default
// without an id.
func BrokerConfigs(t testing.TB, adm *kadm.Client, ids ...int32) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeBrokerConfigs(context.Background(), ids...)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describing broker configs %v: %v %+v", ids, err, rcs)
	}
	out := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		out[c.Key] = c
	}
	return out
}

// TopicConfig is the config key of topic as DescribeConfigs reports it.
func TopicConfig(t testing.TB, adm *kadm.Client, topic, key string) kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return ConfigsByName(t, rcs, topic)[key]
}

// WantConfig fails the test unless c has value, from the source src.
func WantConfig(t testing.TB, what string, c kadm.Config, value string, src kmsg.ConfigSource) {
	t.Helper()
	if c.MaybeValue() != value || c.Source != src {
		t.Errorf("%s: %s = %q from %v, want %q from %v", what, c.Key, c.MaybeValue(), c.Source, value, src)
	}
}

// DescribeQuotas returns the client quotas matching comps as sorted lines
// "user=alice: producer_byte_rate=1024".
func DescribeQuotas(t testing.TB, cl *kgo.Client, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) []string {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Components, req.Strict = comps, strict
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("DescribeClientQuotas: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	var lines []string
	for _, e := range resp.Entries {
		var ents, vals []string
		for _, c := range e.Entity {
			name := "<default>"
			if c.Name != nil {
				name = *c.Name
			}
			ents = append(ents, c.Type+"="+name)
		}
		for _, v := range e.Values {
			vals = append(vals, fmt.Sprintf("%s=%.0f", v.Key, v.Value))
		}
		sort.Strings(vals)
		lines = append(lines, strings.Join(ents, ",")+": "+strings.Join(vals, ","))
	}
	sort.Strings(lines)
	return lines
}
