package producerid

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// batchOf is one record batch of producer id pid.
func batchOf(pid int64) []byte {
	rb := kmsg.RecordBatch{Magic: 2, ProducerID: pid, NumRecords: 1}
	rec := kmsg.Record{Value: []byte("v")}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	rb.Records = rec.AppendTo(nil)
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[recordbatch.OffLength:], uint32(len(b)-recordbatch.LengthPrefix))
	recordbatch.SetCRC(b)
	return b
}

// A batch with an id handed to another principal is refused, wherever it
// stands among the request's batches; the id's own principal, ids this
// broker does not know and batches without an id pass.
func TestRefusalOfAnotherPrincipalsID(t *testing.T) {
	ids, err := Open(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	alices, err := ids.Next("User:alice")
	if err != nil {
		t.Fatal(err)
	}
	two := append(batchOf(-1), batchOf(alices)...)
	for _, c := range []struct {
		principal string
		records   []byte
		want      int16
	}{
		{"User:alice", two, 0},
		{"User:bob", two, kerr.InvalidProducerIDMapping.Code},
		{"User:bob", batchOf(-1), 0},
		{"User:bob", batchOf(alices + 1), 0}, // not handed out here
		{"User:bob", two[:len(two)-1], 0},    // torn: the append refuses the framing
	} {
		if code, msg := ids.Refusal(c.principal, c.records); code != c.want || (code != 0) != (msg != "") {
			t.Errorf("%s, %d bytes: refusal %d %q, want %d", c.principal, len(c.records), code, msg, c.want)
		}
	}
}
