package schema

// Reading Avro binary without decoding it: the walker skips values by
// their encodings, so HeaderLayout.Read reaches the header without
// decoding the event, HeaderLayout.Check validates a whole body, and
// checkLengths bounds what a decoder will allocate (the Deserializer runs
// it before goavro). It follows a walkPlan, the schema compiled once: the
// loader walks every record it loads, and going through hamba's schema
// tree (an interface call and a type switch per value) cost as much as
// reading the bytes.

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
func checkLengths(p *walkPlan, body []byte) error {
	w := walker{b: body}
	return w.skip(p, 0)
}

// walkPlan is a schema compiled for the walker.
type walkPlan struct {
	kind  walkKind
	n     int         // fixed: size; enum: symbols
	sub   []*walkPlan // record: fields; union: branches
	item  *walkPlan   // array: items; map: values
	empty bool        // array: its items encode to no bytes
	name  string      // enum: full name; other: the type, for errors
}

type walkKind uint8

const (
	walkNull walkKind = iota
	walkBoolean
	walkLong // int and long
	walkFloat
	walkDouble
	walkBytes // bytes and string
	walkFixed
	walkEnum
	walkRecord
	walkUnion
	walkArray
	walkMap
	walkUnknown
)

// compileWalk compiles s. Named records are compiled once, so recursive
// schemas compile to a cyclic plan, which the walker's depth bound
// covers.
func compileWalk(s avro.Schema) *walkPlan {
	return compileWalkIn(s, map[avro.Schema]*walkPlan{})
}

func compileWalkIn(s avro.Schema, seen map[avro.Schema]*walkPlan) *walkPlan {
	s = deref(s)
	if p, ok := seen[s]; ok {
		return p
	}
	p := &walkPlan{kind: walkUnknown, name: string(s.Type())}
	switch s := s.(type) {
	case *avro.NullSchema:
		p.kind = walkNull
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Null:
			p.kind = walkNull
		case avro.Boolean:
			p.kind = walkBoolean
		case avro.Int, avro.Long:
			p.kind = walkLong
		case avro.Float:
			p.kind = walkFloat
		case avro.Double:
			p.kind = walkDouble
		case avro.String, avro.Bytes:
			p.kind = walkBytes
		}
	case *avro.RecordSchema:
		p.kind = walkRecord
		seen[s] = p
		for _, f := range s.Fields() {
			p.sub = append(p.sub, compileWalkIn(f.Type(), seen))
		}
	case *avro.EnumSchema:
		p.kind, p.n, p.name = walkEnum, len(s.Symbols()), s.FullName()
	case *avro.FixedSchema:
		p.kind, p.n = walkFixed, s.Size()
	case *avro.UnionSchema:
		p.kind = walkUnion
		for _, t := range s.Types() {
			p.sub = append(p.sub, compileWalkIn(t, seen))
		}
	case *avro.ArraySchema:
		p.kind, p.item, p.empty = walkArray, compileWalkIn(s.Items(), seen), encodesEmpty(s.Items(), 0)
	case *avro.MapSchema:
		p.kind, p.item = walkMap, compileWalkIn(s.Values(), seen)
	}
	return p
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
	if len(w.b) > 0 && w.b[0] < 0x80 {
		// One byte, as most counts, lengths and branches are.
		u := int64(w.b[0])
		w.b = w.b[1:]
		return u>>1 ^ -(u & 1), nil
	}
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

func (w *walker) skip(p *walkPlan, depth int) error {
	if depth > maxSkipDepth {
		return w.bad("values nested too deep")
	}
	switch p.kind {
	case walkNull:
		return nil
	case walkBoolean:
		if len(w.b) == 0 || w.b[0] > 1 {
			return w.bad("a boolean that is neither 0 nor 1")
		}
		w.b = w.b[1:]
		return nil
	case walkLong:
		_, err := w.long()
		return err
	case walkFloat:
		return w.fixed(4)
	case walkDouble:
		return w.fixed(8)
	case walkBytes:
		_, err := w.bytes()
		return err
	case walkRecord:
		for _, f := range p.sub {
			if err := w.skip(f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case walkEnum:
		i, err := w.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(p.n) {
			return w.bad(fmt.Sprintf("enum %s index %d out of range", p.name, i))
		}
		return nil
	case walkFixed:
		return w.fixed(p.n)
	case walkUnion:
		i, err := w.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(p.sub)) {
			return w.bad("a union branch out of range")
		}
		return w.skip(p.sub[i], depth+1)
	case walkArray:
		return w.blocks(p.item, false, p.empty, depth)
	case walkMap:
		return w.blocks(p.item, true, false, depth)
	}
	return w.bad(fmt.Sprintf("a value of type %s", p.name))
}

// blocks skips the blocks of an array or map: a count, negative when a
// byte size follows, until 0. A block with a size is still walked item by
// item, and must end exactly there: skipping it whole would let a body
// that no decoder reads pass.
func (w *walker) blocks(item *walkPlan, isMap, empty bool, depth int) error {
	var keys mapKeys
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
				k, err := w.bytes()
				if err != nil {
					return err
				}
				if !keys.add(k) {
					return w.bad(fmt.Sprintf("map key %q twice", k))
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

// mapKeys are the keys of one map seen so far. A key written twice is
// refused: some decoders (goavro, which reads the warehouse for the audit)
// fail on it, others keep one of the values. Small maps, the usual ones,
// are checked without allocating.
type mapKeys struct {
	few  [8][]byte
	n    int
	many map[string]struct{}
}

func (m *mapKeys) add(k []byte) bool {
	if m.many == nil {
		for _, x := range m.few[:m.n] {
			if string(x) == string(k) {
				return false
			}
		}
		if m.n < len(m.few) {
			m.few[m.n] = k
			m.n++
			return true
		}
		m.many = make(map[string]struct{}, 2*len(m.few))
		for _, x := range m.few {
			m.many[string(x)] = struct{}{}
		}
	}
	if _, dup := m.many[string(k)]; dup {
		return false
	}
	m.many[string(k)] = struct{}{}
	return true
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
