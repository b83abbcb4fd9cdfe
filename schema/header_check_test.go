package schema_test

import (
	"errors"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/linkedin/goavro/v2"

	"github.com/tributary-io/tributary/schema"
)

// kitchenSchema has a value of every kind Check must look into after the
// header: boolean, enum, map, array (written with block sizes below).
const kitchenSchema = `{"type":"record","name":"K","fields":[
 {"name":"header","type":{"type":"record","name":"H","fields":[{"name":"time","type":"long"}]}},
 {"name":"ok","type":"boolean"},
 {"name":"color","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"attrs","type":{"type":"map","values":"long"}}]}`

// TestHeaderLayoutCheck: Check accepts exactly what a decoder accepts:
// every encoded event of every header shape, and none of the same bodies
// cut short, with a byte left over, or broken after the header, where
// Read alone still finds a time. Time reads what Read does.
func TestHeaderLayoutCheck(t *testing.T) {
	for _, tc := range layoutCases(t) {
		codec, _ := goavro.NewCodec(tc.schema)
		body, err := codec.BinaryFromNative(nil, tc.event)
		if err != nil {
			t.Fatal(err)
		}
		l := schema.NewHeaderLayout(avro.MustParse(tc.schema), tc.field)
		if err := l.Check(body); err != nil {
			t.Errorf("%s: a valid body: %v", tc.name, err)
		}
		ms, _, rerr := l.Read(body)
		if tms, terr := l.Time(body); tms != ms || errors.Is(terr, schema.ErrNoHeaderTime) != errors.Is(rerr, schema.ErrNoHeaderTime) {
			t.Errorf("%s: Time gave %d, %v; Read %d, %v", tc.name, tms, terr, ms, rerr)
		}
		for n := range len(body) {
			if err := l.Check(body[:n]); !errors.Is(err, schema.ErrBadBody) {
				t.Fatalf("%s: cut at %d of %d: %v, want ErrBadBody", tc.name, n, len(body), err)
			}
		}
		if err := l.Check(append(body, 0)); !errors.Is(err, schema.ErrBadBody) {
			t.Errorf("%s: a byte left over: %v, want ErrBadBody", tc.name, err)
		}
	}

	l := schema.NewHeaderLayout(avro.MustParse(kitchenSchema), "")
	// time 1, true, GREEN, ["a"] as one block of 1 item in 2 bytes, {} .
	valid := []byte{2, 1, 2, 1, 4, 2, 'a', 0, 0}
	if err := l.Check(valid); err != nil {
		t.Fatalf("valid kitchen body: %v", err)
	}
	if err := l.Check(manyKeys(12, false)); err != nil {
		t.Fatalf("valid kitchen body with 12 map keys: %v", err)
	}
	if _, err := goavro.NewCodec(kitchenSchema); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"boolean 2":                {2, 2, 2, 1, 4, 2, 'a', 0, 0},
		"enum index 2":             {2, 1, 4, 1, 4, 2, 'a', 0, 0},
		"enum index -1":            {2, 1, 1, 1, 4, 2, 'a', 0, 0},
		"block size too large":     {2, 1, 2, 1, 6, 2, 'a', 0, 0, 0},
		"block size too small":     {2, 1, 2, 1, 2, 2, 'a', 0, 0},
		"union branch in a string": {2, 1, 2, 1, 4, 4, 'a', 0, 0},
		"map key twice":            {2, 1, 2, 0, 4, 2, 'k', 2, 2, 'k', 4, 0},
		"map key twice, many keys": manyKeys(12, true),
	} {
		ms, _, rerr := l.Read(body)
		if err := l.Check(body); !errors.Is(err, schema.ErrBadBody) {
			t.Errorf("%s: Check gave %v, want ErrBadBody (Read alone gave %d, %v)", name, err, ms, rerr)
		}
	}
}

// FuzzHeaderLayoutCheck: whatever Check accepts, goavro decodes whole.
func FuzzHeaderLayoutCheck(f *testing.F) {
	codec, _ := goavro.NewCodec(kitchenSchema)
	l := schema.NewHeaderLayout(avro.MustParse(kitchenSchema), "")
	f.Add([]byte{2, 1, 2, 1, 4, 2, 'a', 0, 0})
	f.Add([]byte{2, 0, 0, 2, 2, 'b', 0, 2, 2, 'k', 4, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		if l.Check(body) != nil {
			return
		}
		if _, rest, err := codec.NativeFromBinary(body); err != nil || len(rest) > 0 {
			t.Fatalf("Check accepted %x; goavro: %v, %d bytes left", body, err, len(rest))
		}
	})
}

// manyKeys is a kitchen body whose map has n keys, the last the same as
// the first when dup.
func manyKeys(n int, dup bool) []byte {
	b := []byte{2, 1, 2, 0, byte(2 * n)}
	for i := range n {
		k := byte('a' + i)
		if dup && i == n-1 {
			k = 'a'
		}
		b = append(b, 2, k, 2)
	}
	return append(b, 0)
}
