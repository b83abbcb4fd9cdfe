package kafkaapi

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/netserver"
)

func serveNothing(Conn, *Request) *netserver.Pending { return nil }

// TestRegistryRefusesWhatItCannotServe: a key registered twice (by the
// root and a handler package alike), an unknown key and a range kmsg
// cannot decode are programming errors caught when the registry is built.
func TestRegistryRefusesWhatItCannotServe(t *testing.T) {
	for _, c := range []struct {
		name          string
		key, min, max int16
	}{
		{"twice", 18, 0, 4},
		{"unknown key", 9999, 0, 0},
		{"negative min", 3, -1, 4},
		{"min above max", 3, 5, 4},
		{"past kmsg", 3, 0, kmsg.NewPtrMetadataRequest().MaxVersion() + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewRegistry()
			r.Register(18, 0, 4, serveNothing)
			defer func() {
				if recover() == nil {
					t.Fatalf("Register(%d, %d, %d) did not panic", c.key, c.min, c.max)
				}
			}()
			r.Register(c.key, c.min, c.max, serveNothing)
		})
	}
}

// TestRegistryAnswersFromOneTable: Supports, Keys and APIVersions read the
// same ranges.
func TestRegistryAnswersFromOneTable(t *testing.T) {
	r := NewRegistry()
	r.Register(18, 0, 4, serveNothing)
	r.Register(0, 3, 11, serveNothing)
	if got := r.Keys(); !slices.Equal(got, []int16{0, 18}) {
		t.Fatalf("Keys %v, want [0 18]", got)
	}
	for _, c := range []struct {
		key, v int16
		want   bool
	}{{0, 2, false}, {0, 3, true}, {0, 11, true}, {0, 12, false}, {18, 4, true}, {1, 0, false}} {
		if got := r.Supports(c.key, c.v); got != c.want {
			t.Errorf("Supports(%d, %d) = %v, want %v", c.key, c.v, got, c.want)
		}
	}
	want := []kmsg.ApiVersionsResponseApiKey{{ApiKey: 0, MinVersion: 3, MaxVersion: 11}, {ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
	got := r.APIVersions()
	same := func(a, b kmsg.ApiVersionsResponseApiKey) bool {
		return a.ApiKey == b.ApiKey && a.MinVersion == b.MinVersion && a.MaxVersion == b.MaxVersion
	}
	if !slices.EqualFunc(got, want, same) {
		t.Errorf("APIVersions %+v, want %+v", got, want)
	}
}

// TestAPIVersionsUnsupportedListsTheRegistry: the answer to an
// ApiVersions probe at a version not served is a v0 frame with the
// probe's correlation id, UNSUPPORTED_VERSION, and every registered range,
// ApiVersions' own included.
func TestAPIVersionsUnsupportedListsTheRegistry(t *testing.T) {
	r := NewRegistry()
	r.RegisterAPIVersions()
	r.Register(3, 0, 12, nil)
	frame := []byte(r.APIVersionsUnsupported(77).(netserver.Encoded))
	if n := int(binary.BigEndian.Uint32(frame)); n != len(frame)-4 {
		t.Fatalf("frame length %d, body %d bytes", n, len(frame)-4)
	}
	if id := int32(binary.BigEndian.Uint32(frame[4:])); id != 77 {
		t.Fatalf("correlation id %d, want 77", id)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := resp.ReadFrom(frame[8:]); err != nil {
		t.Fatal(err)
	}
	want := []kmsg.ApiVersionsResponseApiKey{{ApiKey: 3, MinVersion: 0, MaxVersion: 12}, {ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 2 ||
		resp.ApiKeys[0].ApiKey != want[0].ApiKey || resp.ApiKeys[0].MaxVersion != 12 || resp.ApiKeys[1].ApiKey != 18 || resp.ApiKeys[1].MaxVersion != 4 {
		t.Fatalf("answer %+v, want UNSUPPORTED_VERSION listing %+v", resp, want)
	}
}
