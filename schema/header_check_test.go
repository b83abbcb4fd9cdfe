package schema_test

import (
	"errors"
	"fmt"
	"strings"
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
		ms, server, rerr := l.Read(body)
		if tms, terr := l.Time(body); tms != ms || errors.Is(terr, schema.ErrNoHeaderTime) != errors.Is(rerr, schema.ErrNoHeaderTime) {
			t.Errorf("%s: Time gave %d, %v; Read %d, %v", tc.name, tms, terr, ms, rerr)
		}
		if cms, cerr := l.CheckTime(body); cms != ms || fmt.Sprint(cerr) != fmt.Sprint(rerr) {
			t.Errorf("%s: CheckTime gave %d, %v; Read %d, %v", tc.name, cms, cerr, ms, rerr)
		}
		if cms, cs, cerr := l.CheckRead(body); cms != ms || cs != server || fmt.Sprint(cerr) != fmt.Sprint(rerr) {
			t.Errorf("%s: CheckRead gave %d, %q, %v; Read %d, %q, %v", tc.name, cms, cs, cerr, ms, server, rerr)
		}
		for n := range len(body) {
			if err := l.Check(body[:n]); !errors.Is(err, schema.ErrBadBody) {
				t.Fatalf("%s: cut at %d of %d: %v, want ErrBadBody", tc.name, n, len(body), err)
			}
			if _, err := l.CheckTime(body[:n]); !errors.Is(err, schema.ErrBadBody) {
				t.Fatalf("%s: cut at %d of %d: CheckTime gave %v, want ErrBadBody", tc.name, n, len(body), err)
			}
		}
		if err := l.Check(append(body, 0)); !errors.Is(err, schema.ErrBadBody) {
			t.Errorf("%s: a byte left over: %v, want ErrBadBody", tc.name, err)
		}
		if _, _, err := l.CheckRead(append(body, 0)); !errors.Is(err, schema.ErrBadBody) {
			t.Errorf("%s: a byte left over: CheckRead gave %v, want ErrBadBody", tc.name, err)
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
		if _, err := l.CheckTime(body); !errors.Is(err, schema.ErrBadBody) {
			t.Errorf("%s: CheckTime gave %v, want ErrBadBody", name, err)
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
		cerr := l.Check(body)
		ms, terr := l.CheckTime(body)
		if cerr == nil {
			if tms, err := l.Time(body); tms != ms || fmt.Sprint(err) != fmt.Sprint(terr) {
				t.Fatalf("%x: CheckTime gave %d, %v; Time %d, %v", body, ms, terr, tms, err)
			}
		} else if fmt.Sprint(cerr) != fmt.Sprint(terr) {
			t.Fatalf("%x: CheckTime gave %v, Check %v", body, terr, cerr)
		}
		if cerr != nil {
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

// recursiveSchema is a list of itself, in a union and in an array, after
// a header: the walker's records that contain themselves and its unions
// of more than null and one type.
const recursiveSchema = `{"type":"record","name":"Node","fields":[
 {"name":"header","type":{"type":"record","name":"H","fields":[{"name":"time","type":"long"}]}},
 {"name":"v","type":["null","int","string",{"type":"enum","name":"E","symbols":["A"]}]},
 {"name":"next","type":["null","Node"]},
 {"name":"kids","type":{"type":"array","items":"Node"}}]}`

// TestHeaderLayoutCheckRecursive: a recursive schema is walked whole, each
// level as strictly as the top one, and nesting beyond the walker's bound
// is refused rather than followed.
func TestHeaderLayoutCheckRecursive(t *testing.T) {
	codec, err := goavro.NewCodec(recursiveSchema)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(ms int64) map[string]any {
		return map[string]any{"header": map[string]any{"time": ms}, "v": map[string]any{"E": "A"}, "next": nil, "kids": []any{}}
	}
	mid := leaf(2)
	mid["v"], mid["kids"] = map[string]any{"string": "x"}, []any{leaf(3), leaf(4)}
	top := leaf(1)
	top["v"], top["next"] = map[string]any{"int": int32(-5)}, map[string]any{"Node": mid}
	body, err := codec.BinaryFromNative(nil, top)
	if err != nil {
		t.Fatal(err)
	}
	l := schema.NewHeaderLayout(avro.MustParse(recursiveSchema), "")
	if ms, err := l.CheckTime(body); ms != 1 || err != nil {
		t.Fatalf("CheckTime: %d, %v; want 1", ms, err)
	}
	for n := range len(body) {
		if err := l.Check(body[:n]); !errors.Is(err, schema.ErrBadBody) {
			t.Fatalf("cut at %d of %d: %v, want ErrBadBody", n, len(body), err)
		}
	}
	// The enum of a node two levels down out of range: index 1 of 1.
	bad := append([]byte(nil), body...)
	i := len(bad) - 5 // the last leaf: time 4, branch 3 (E), index 0, next null, kids 0; then mid's and top's kids 0
	if bad[i-1] != 6 || bad[i] != 0 {
		t.Fatalf("unexpected encoding %x", body)
	}
	bad[i] = 2
	if err := l.Check(bad); !errors.Is(err, schema.ErrBadBody) {
		t.Errorf("an enum index out of range deep down: %v, want ErrBadBody", err)
	}
	// 600 nodes each the next of the one before.
	var deep []byte
	for range 600 {
		deep = append(deep, 2, 0, 2) // time 1, v null, next: branch Node
	}
	deep = append(deep, 2, 0, 0, 0)
	for range 600 {
		deep = append(deep, 0) // kids
	}
	if err := l.Check(deep); !errors.Is(err, schema.ErrBadBody) || !strings.Contains(err.Error(), "too deep") {
		t.Errorf("nesting of 600: %v, want ErrBadBody", err)
	}
}
