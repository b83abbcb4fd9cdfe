package topicapi

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/tributary-io/tributary/broker/kafkaapi"
)

// TestRegisterAddsEveryTopicAPI: Register puts each API of this package in
// the broker's registry, and New needs nothing served to build them.
func TestRegisterAddsEveryTopicAPI(t *testing.T) {
	r := kafkaapi.NewRegistry()
	New(Config{}).Register(r)
	// Metadata, CreateTopics, DeleteTopics, DescribeLogDirs,
	// CreatePartitions, DescribeTopicPartitions.
	want := []int16{3, 19, 20, 35, 37, 75}
	if got := r.Keys(); !slices.Equal(got, want) {
		t.Fatalf("registered keys %v, want %v", got, want)
	}
}

// TestCheckMetadataTopicsCountsBeforeDecoding: the topic count is read
// from the raw body in both encodings, and a count past the limit refused.
func TestCheckMetadataTopicsCountsBeforeDecoding(t *testing.T) {
	fixed := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	compact := func(n uint64) []byte { return binary.AppendUvarint(nil, n+1) }
	for _, c := range []struct {
		version int16
		body    []byte
		ok      bool
	}{
		{8, fixed(maxMetadataTopics), true},
		{8, fixed(maxMetadataTopics + 1), false},
		{8, fixed(-1), true}, // null: every topic
		{12, compact(maxMetadataTopics), true},
		{12, compact(maxMetadataTopics + 1), false},
		{12, []byte{0}, true}, // null
		{8, []byte{0, 0}, false},
		{12, nil, false},
	} {
		if err := CheckMetadataTopics(c.version, c.body); (err == nil) != c.ok {
			t.Errorf("v%d body %x: %v", c.version, c.body, err)
		}
	}
}
