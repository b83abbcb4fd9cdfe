package quota

import (
	"maps"
	"strings"
	"testing"
)

// The quota store is read back from disk or ZooKeeper, where a crash, a
// hand edit or another program may have left anything: whatever decodes is
// something the broker could have written itself, and writes back to
// itself.

func FuzzDecodeQuotas(f *testing.F) {
	f.Add([]byte(`[{"entity":[{"type":"user","name":"alice"}],"quotas":{"producer_byte_rate":1024}}]`))
	f.Add([]byte(`[{"entity":[{"type":"client-id","name":null}],"quotas":{"consumer_byte_rate":1}}]`))
	f.Add([]byte(`[{"entity":[{"type":"user","name":"a"}],"quotas":{"producer_byte_rate":0}}]`))
	f.Add([]byte(`[{"entity":[{"type":"user","name":"a"}],"quotas":{"producer_byte_rate":-5}}]`))
	f.Add([]byte(`[{"entity":[{"type":"user","name":"a"}],"quotas":{"producer_byte_rate":1e300}}]`))
	f.Add([]byte(`[{"entity":[{"type":"user","name":"a"}],"quotas":{"request_percentage":50}}]`))
	f.Add([]byte(`[{"entity":[{"type":"ip","name":"1.2.3.4"}],"quotas":{}}]`))
	f.Add([]byte(`[{"entity":[],"quotas":{}}]`))
	f.Add([]byte(`{"not":"a list"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := decodeQuotas(data, "fuzz")
		if err != nil {
			return
		}
		for e, v := range table {
			for key, rate := range v {
				if err := checkQuota(key, rate, false); err != nil {
					t.Fatalf("decoded %s: %v", EntityString(e.Components()), err)
				}
			}
		}
		again, err := decodeQuotas(encodeQuotas(table), "fuzz")
		if err != nil || len(again) != len(table) {
			t.Fatalf("%v does not survive a write and read: %v, %v", table, again, err)
		}
		for e, v := range table {
			if !maps.Equal(again[e], v) {
				t.Fatalf("entity %s: %v read back as %v", EntityString(e.Components()), v, again[e])
			}
		}
	})
}

// A damaged quota store (a rate of 0, negative, fractional or past int64,
// or a key Tributary does not enforce) is refused when read, naming the
// store and the entity, instead of handing the throttle a rate it would
// divide by.
func TestDamagedQuotaStoreRefused(t *testing.T) {
	for _, quotas := range []string{
		`{"producer_byte_rate":0}`,
		`{"producer_byte_rate":-5}`,
		`{"consumer_byte_rate":1.5}`,
		`{"consumer_byte_rate":1e300}`,
		`{"request_percentage":50}`,
	} {
		data := `[{"entity":[{"type":"user","name":"alice"}],"quotas":` + quotas + `}]`
		_, err := decodeQuotas([]byte(data), "quotas.json")
		if err == nil || !strings.Contains(err.Error(), "quotas in quotas.json, entity user=alice") {
			t.Errorf("%s: %v", quotas, err)
		}
	}
}
