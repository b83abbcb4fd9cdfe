package log

import (
	"slices"
	"testing"
)

// A leader-epoch checkpoint is read from disk at every Open, where a crash,
// a full disk or a hand edit may have left anything. Whatever decodes is a
// strictly increasing list of non-negative epochs with non-decreasing
// start offsets (what truncation relies on), and writes back to itself.
func FuzzDecodeEpochs(f *testing.F) {
	f.Add(encodeEpochs([]epochEntry{{0, 0}, {3, 120}, {4, 120}}))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n2\n5 10\n4 20\n"))            // epochs going back
	f.Add([]byte("0\n9999999999\n1 1\n"))          // lying count
	f.Add([]byte("0\n1\n-1 0\n"))                  // negative epoch
	f.Add([]byte("0\n1\n2147483648 0\n"))          // epoch past int32
	f.Add([]byte("1\n1\n1 1\n"))                   // unknown version
	f.Add([]byte("0\n1\n1 9223372036854775808\n")) // offset past int64
	f.Add([]byte("\x00\xff garbage \n\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := decodeEpochs(data)
		if err != nil {
			return
		}
		for i, e := range es {
			if e.epoch < 0 || e.start < 0 || (i > 0 && (e.epoch <= es[i-1].epoch || e.start < es[i-1].start)) {
				t.Fatalf("decoded %v from %q: not increasing and non-negative", es, data)
			}
		}
		again, err := decodeEpochs(encodeEpochs(es))
		if err != nil || !slices.Equal(again, es) {
			t.Fatalf("%v does not survive a write and read: %v, %v", es, again, err)
		}
	})
}
