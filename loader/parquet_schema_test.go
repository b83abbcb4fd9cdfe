package loader

import (
	"encoding/hex"
	"github.com/linkedin/goavro/v2"
	"github.com/parquet-go/parquet-go"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
)

// Schemas with no Parquet form are refused with the field that has none,
// never looped on: a record that contains itself would otherwise recurse
// until the stack overflows and kill the loader.
func TestParquetSchemaRefusals(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`,
			"field next: record Node contains itself"},
		{`{"type":"record","name":"T","fields":[{"name":"kids","type":{"type":"array","items":"T"}}]}`,
			"field kids[]: record T contains itself"},
		{`{"type":"record","name":"N","fields":[{"name":"nothing","type":"null"}]}`,
			"field nothing: a field that is always null has no Parquet type"},
		{`"string"`, "a Parquet file holds records"},
	} {
		s, err := avro.ParseWithCache(c.schema, "", &avro.SchemaCache{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := parquetSchema(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.schema, err, c.want)
		}
	}
	// A named type used twice is no recursion.
	s := avro.MustParse(`{"type":"record","name":"R","fields":[
		{"name":"a","type":{"type":"record","name":"P","fields":[{"name":"x","type":"int"}]}},
		{"name":"b","type":"P"}]}`)
	if _, _, err := parquetSchema(s); err != nil {
		t.Errorf("a record type used twice: %v", err)
	}
}

// Decimals are written in two's complement, sign-extended to their width.
func TestTwosComplement(t *testing.T) {
	for _, c := range []struct {
		n    int64
		size int
		want string
	}{{0, 2, "0000"}, {1, 2, "0001"}, {-1, 2, "ffff"}, {-2493, 4, "fffff643"}, {32767, 2, "7fff"}, {-32768, 2, "8000"}} {
		got := twosComplement(bigInt(c.n), c.size)
		if hexs := hexOf(got); hexs != c.want {
			t.Errorf("%d in %d bytes: %s, want %s", c.n, c.size, hexs, c.want)
		}
	}
	for p, want := range map[int]int{1: 1, 2: 1, 3: 2, 9: 4, 18: 8, 38: 16} {
		if got := decimalBytes(p); got != want {
			t.Errorf("precision %d: %d bytes, want %d", p, got, want)
		}
	}
}

func bigInt(n int64) *big.Int { return big.NewInt(n) }
func hexOf(b []byte) string   { return hex.EncodeToString(b) }

// Every kind of union branch, decoded by goavro as the loader decodes
// records, is found by its key: a key the shredder did not expect would
// write the value as null in every member.
func TestParquetUnionBranches(t *testing.T) {
	text := `{"type":"record","name":"U","namespace":"ns","fields":[{"name":"u","type":["null","int",
		{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]},
		{"type":"enum","name":"E","symbols":["X","Y"]},
		{"type":"fixed","name":"F","size":2},
		{"type":"long","logicalType":"timestamp-millis"},
		{"type":"string","logicalType":"uuid"}]}]}`
	codec, err := goavro.NewCodec(text)
	if err != nil {
		t.Fatal(err)
	}
	_, root, err := parquetSchema(avro.MustParse(text))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []any{
		nil, goavro.Union("int", int32(3)), goavro.Union("ns.R", map[string]any{"a": int32(1)}),
		goavro.Union("ns.E", "Y"), goavro.Union("ns.F", []byte{1, 2}),
		goavro.Union("long.timestamp-millis", time.UnixMilli(1700000000000)),
		goavro.Union("string", "00000000-0000-4000-8000-000000000001"),
	} {
		bin, err := codec.BinaryFromNative(nil, map[string]any{"u": v})
		if err != nil {
			t.Fatalf("branch %d: %v", i, err)
		}
		native, _, err := codec.NativeFromBinary(bin)
		if err != nil {
			t.Fatal(err)
		}
		cols := make([][]parquet.Value, root.last+1)
		if err := root.shred(native, 0, 0, cols); err != nil {
			t.Errorf("branch %d (%v): %v", i, native, err)
			continue
		}
		nonNull := 0
		for _, c := range cols {
			for _, x := range c {
				if !x.IsNull() {
					nonNull++
				}
			}
		}
		if want := min(i, 1); nonNull != want {
			t.Errorf("branch %d (%v): %d values written, want %d", i, native, nonNull, want)
		}
	}
	if err := root.shred(map[string]any{"u": map[string]any{"bogus": 1}}, 0, 0, make([][]parquet.Value, root.last+1)); err == nil {
		t.Error("a branch key of no member was written (as nulls)")
	}
}

// A decimal with more digits than its precision (Avro decoders do not
// check) is a bad record, not a panic of a too-small buffer.
func TestParquetDecimalBeyondPrecision(t *testing.T) {
	n := pqDecimal(9, 2, decimalBytes(9))
	for _, r := range []*big.Rat{big.NewRat(1_000_000_000, 100), big.NewRat(-1_000_000_000, 100), new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 200))} {
		if _, err := n.leaf(r); err == nil || !strings.Contains(err.Error(), "more than the 9 digits") {
			t.Errorf("%s: %v, want it refused", r.FloatString(2), err)
		}
	}
	if _, err := n.leaf(big.NewRat(999_999_999, 100)); err != nil {
		t.Errorf("the largest decimal(9,2): %v", err)
	}
}
