package schema

// Reading Avro binary without decoding it: the walker skips values by
// their encodings, so HeaderLayout.Read reaches the header without
// decoding the event, HeaderLayout.Check validates a whole body, and
// checkLengths bounds what a decoder will allocate (the Deserializer runs
// it before goavro).

import (
	"encoding/binary"
	"fmt"

	"github.com/hamba/avro/v2"
)

// maxSkipDepth bounds the nesting a skip follows, so a recursive schema
// and a crafted body cannot exhaust the stack.
const maxSkipDepth = 512

// checkLengths walks a whole body written in s and fails when a count or
// length it claims runs past the end. goavro allocates an array or map of
// the claimed count before reading a single item, so a few crafted bytes
// could make it allocate gigabytes; after this check, what it allocates is
// bounded by the body's size.
func checkLengths(s avro.Schema, body []byte) error {
	w := walker{b: body}
	return w.skip(s, 0)
}

// walker reads an Avro binary body just far enough: it skips values by
// their encodings and reads the few it needs. Every length is checked
// against what is left, so a malformed body costs an error, never a panic
// or an allocation of the size it claims. What a skip accepts is valid
// Avro binary of its schema, as strictly as a decoder checks it: booleans
// are 0 or 1, enum indexes and union branches in range, and a block that
// states its byte size holds exactly its items.
type walker struct{ b []byte }

func (w *walker) bad(what string) error {
	return fmt.Errorf("%w: %s", ErrBadBody, what)
}

func (w *walker) long() (int64, error) {
	v, n := binary.Varint(w.b)
	if n <= 0 {
		return 0, w.bad("a long that does not decode")
	}
	w.b = w.b[n:]
	return v, nil
}

func (w *walker) bytes() ([]byte, error) {
	l, err := w.long()
	if err != nil {
		return nil, err
	}
	if l < 0 || l > int64(len(w.b)) {
		return nil, w.bad("a length past the end")
	}
	b := w.b[:l]
	w.b = w.b[l:]
	return b, nil
}

func (w *walker) fixed(n int) error {
	if n < 0 || n > len(w.b) {
		return w.bad("a fixed value past the end")
	}
	w.b = w.b[n:]
	return nil
}

// branch reads a union index when br is a branch (-1: not a union) and
// reports whether the value is that branch rather than null.
func (w *walker) branch(br int) (bool, error) {
	if br < 0 {
		return true, nil
	}
	i, err := w.long()
	if err != nil {
		return false, err
	}
	if i != 0 && i != 1 {
		return false, w.bad("a union branch out of range")
	}
	return int(i) == br, nil
}

func (w *walker) skip(s avro.Schema, depth int) error {
	if depth > maxSkipDepth {
		return w.bad("values nested too deep")
	}
	switch s := deref(s).(type) {
	case *avro.NullSchema:
		return nil
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Null:
			return nil
		case avro.Boolean:
			if len(w.b) == 0 || w.b[0] > 1 {
				return w.bad("a boolean that is neither 0 nor 1")
			}
			w.b = w.b[1:]
			return nil
		case avro.Int, avro.Long:
			_, err := w.long()
			return err
		case avro.Float:
			return w.fixed(4)
		case avro.Double:
			return w.fixed(8)
		case avro.String, avro.Bytes:
			_, err := w.bytes()
			return err
		}
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			if err := w.skip(f.Type(), depth+1); err != nil {
				return err
			}
		}
		return nil
	case *avro.EnumSchema:
		i, err := w.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(s.Symbols())) {
			return w.bad(fmt.Sprintf("enum %s index %d out of range", s.FullName(), i))
		}
		return nil
	case *avro.FixedSchema:
		return w.fixed(s.Size())
	case *avro.UnionSchema:
		i, err := w.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(s.Types())) {
			return w.bad("a union branch out of range")
		}
		return w.skip(s.Types()[i], depth+1)
	case *avro.ArraySchema:
		return w.blocks(s.Items(), false, depth)
	case *avro.MapSchema:
		return w.blocks(s.Values(), true, depth)
	}
	return w.bad(fmt.Sprintf("a value of type %s", s.Type()))
}

// blocks skips the blocks of an array or map: a count, negative when a
// byte size follows, until 0. A block with a size is still walked item by
// item, and must end exactly there: skipping it whole would let a body
// that no decoder reads pass.
func (w *walker) blocks(item avro.Schema, isMap bool, depth int) error {
	empty := !isMap && encodesEmpty(item, 0)
	for {
		n, err := w.long()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		end := -1 // bytes left after the block, when its size is stated
		if n < 0 {
			if n = -n; n < 0 {
				return w.bad("a block count out of range")
			}
			size, err := w.long()
			if err != nil {
				return err
			}
			if size < 0 || size > int64(len(w.b)) {
				return w.bad("a block size past the end")
			}
			end = len(w.b) - int(size)
		}
		if empty {
			if end >= 0 && end != len(w.b) {
				return w.bad("a block size that does not match its items")
			}
			continue // items of no bytes: nothing to skip, however many
		}
		if n > int64(len(w.b)) {
			return w.bad("an array or map longer than the body")
		}
		for range n {
			if isMap {
				if _, err := w.bytes(); err != nil {
					return err
				}
			}
			if err := w.skip(item, depth+1); err != nil {
				return err
			}
		}
		if end >= 0 && end != len(w.b) {
			return w.bad("a block size that does not match its items")
		}
	}
}

// encodesEmpty reports whether every value of s encodes to no bytes (null,
// fixed of size 0, records of such fields).
func encodesEmpty(s avro.Schema, depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch s := deref(s).(type) {
	case *avro.NullSchema:
		return true
	case *avro.FixedSchema:
		return s.Size() == 0
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			if !encodesEmpty(f.Type(), depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
