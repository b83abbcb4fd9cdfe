package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// The broker advertises transaction version 1 only (KIP-890's second
// part is not implemented): no transaction.version feature, and none of
// the API versions that belong to version 2 (EndTxn v5, which bumps the
// epoch per transaction; TxnOffsetCommit v5, which drops
// AddOffsetsToTxn; InitProducerId v5+). kgo and Java 4.x switch to
// version 2 when the feature says 2, so a wrong feature here would make
// them send Produce v12 without AddPartitionsToTxn and fail every
// transaction. Produce v12 itself is Produce v11 on the wire: a client
// uses it for transactions only with the feature.
func TestOnlyTransactionVersionOneIsAdvertised(t *testing.T) {
	b := testenv.StartBroker(t)
	w := dial(t, b.Addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "tributary-test", "1"
	resp := w.roundTrip(req).(*kmsg.ApiVersionsResponse)
	max := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		max[k.ApiKey] = k.MaxVersion
	}
	for key, most := range map[kmsg.Key]int16{kmsg.EndTxn: 4, kmsg.TxnOffsetCommit: 4, kmsg.InitProducerID: 4, kmsg.AddPartitionsToTxn: 4} {
		if got, ok := max[int16(key)]; !ok || got > most {
			t.Errorf("%s advertised up to v%d (present %v), want at most v%d: higher versions are transaction version 2", key.Name(), got, ok, most)
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" && f.MaxVersionLevel >= 2 {
			t.Errorf("finalized feature transaction.version %d: version 2 is not implemented", f.MaxVersionLevel)
		}
	}
	for _, f := range resp.SupportedFeatures {
		if f.Name == "transaction.version" && f.MaxVersion >= 2 {
			t.Errorf("supported feature transaction.version up to %d: version 2 is not implemented", f.MaxVersion)
		}
	}
}
