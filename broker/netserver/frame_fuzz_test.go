package netserver_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/netserver"
)

// FuzzDecodeRequest: whatever a frame holds, DecodeRequest returns a
// request or an error, never panics, and a request it returns carries the
// header's correlation id. Every key kmsg knows is served here at every
// version, so the header and each body decoder are reached; the broker's
// own FuzzDecodeRequest drives its handlers.
func FuzzDecodeRequest(f *testing.F) {
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		if r := kmsg.RequestForKey(key); r != nil {
			r.SetVersion(r.MaxVersion())
			f.Add(formatter.AppendRequest(nil, r, 1)[4:]) // the read loop strips the size
		}
	}
	all := func(key, version int16) bool {
		r := kmsg.RequestForKey(key)
		return r != nil && version >= 0 && version <= r.MaxVersion()
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 8 {
			return // the read loop refuses frames shorter than a header
		}
		req, err := netserver.DecodeRequest(frame, all, nil)
		if err != nil {
			var unsup *netserver.UnsupportedVersion
			if errors.As(err, &unsup) && all(unsup.Key, unsup.Version) {
				t.Fatalf("key %d v%d refused as unsupported", unsup.Key, unsup.Version)
			}
			return
		}
		if req.Request == nil {
			t.Fatal("no error and no request")
		}
		if want := int32(binary.BigEndian.Uint32(frame[4:])); req.CorrelationID != want {
			t.Fatalf("correlation id %d, want %d", req.CorrelationID, want)
		}
	})
}
