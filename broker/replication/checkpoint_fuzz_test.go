package replication

import (
	"maps"
	"strings"
	"testing"
)

// The broker's small stores are read back from disk or ZooKeeper, where a
// crash, a hand edit or another program may have left anything: whatever
// decodes is something the broker could have written itself, and writes
// back to itself.

func FuzzDecodeHWCheckpoint(f *testing.F) {
	f.Add(encodeHWCheckpoint(map[partKey]int64{{"orders", 0}: 120, {"orders", 1}: 0}))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n5\norders 0 1\n"))            // lying count
	f.Add([]byte("0\n1\norders -1 5\n"))           // negative partition
	f.Add([]byte("0\n1\norders 0 -5\n"))           // negative offset
	f.Add([]byte("0\n1\norders 4294967296 5\n"))   // partition past int32
	f.Add([]byte("\xff\xfe\x00 not a checkpoint")) // garbage
	f.Fuzz(func(t *testing.T, data []byte) {
		hws, err := decodeHWCheckpoint(data)
		if err != nil {
			return
		}
		for k, off := range hws {
			if k.p < 0 || off < 0 || k.topic == "" || strings.ContainsAny(k.topic, " \t\n") {
				t.Fatalf("decoded %v from %q", hws, data)
			}
		}
		again, err := decodeHWCheckpoint(encodeHWCheckpoint(hws))
		if err != nil || !maps.Equal(again, hws) {
			t.Fatalf("%v does not survive a write and read: %v, %v", hws, again, err)
		}
	})
}
