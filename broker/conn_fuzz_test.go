package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecodeRequest feeds arbitrary frames to the request decoder: it must
// return a request or an error, never panic, whatever a client sends.
func FuzzDecodeRequest(f *testing.F) {
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	seeds := []kmsg.Request{
		kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrMetadataRequest(),
		kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest(), kmsg.NewPtrListOffsetsRequest(),
		kmsg.NewPtrCreateTopicsRequest(), kmsg.NewPtrInitProducerIDRequest(),
	}
	for _, r := range seeds {
		vr := supported[r.Key()]
		for _, v := range []int16{vr.min, vr.max} {
			r.SetVersion(v)
			frame := formatter.AppendRequest(nil, r, 1)
			f.Add(frame[4:]) // without the size prefix, as decodeRequest sees it
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 8 {
			return // the read loop refuses frames shorter than a header
		}
		req, err := decodeRequest(frame)
		if err == nil && req.Request == nil {
			t.Fatal("no error and no request")
		}
	})
}
