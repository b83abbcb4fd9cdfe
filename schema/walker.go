package schema

// Reading Avro binary without decoding it: the walker skips values by
// their encodings, so HeaderLayout.Read reaches the header without
// decoding the event, HeaderLayout.CheckTime validates a whole body and
// reads its time in the same walk, and checkLengths bounds what a decoder
// will allocate (the Deserializer runs it before goavro).
//
// The loader walks every record it loads, so the walk is built for speed:
// a schema is compiled once into flat programs of ops (records inlined
// into their parents, so a record costs nothing of its own), run by one
// loop with a switch, no interface call and no allocation per value, and
// the common shapes (a 1 or 2 byte long, a short string, a union of null
// and a long or a string) take a path of their own.

import (
	"encoding/binary"
	"errors"
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
	return w.run(p, p.progs[p.root], 0)
}

// walkPlan is a schema compiled for the walker: programs of ops, each the
// sequence of values one Avro value encodes to.
type walkPlan struct {
	progs    [][]walkOp
	branches []int32  // the programs of unions' branches, by walkOp.sub
	names    []string // enum and unknown types' names, for errors
	root     int32    // the program of the whole value
}

// walkOp is one value to walk.
type walkOp struct {
	kind  walkKind
	br    int8  // optional and captured values: the branch of the value, -1 when not a union
	empty bool  // array: its items encode to no bytes
	n     int32 // fixed: size; enum: symbols; union: branches
	sub   int32 // union: first branch in branches; array, map, call: program; enum, unknown: name
}

type walkKind uint8

const (
	walkLong  walkKind = iota // int and long
	walkBytes                 // bytes and string
	walkBoolean
	walkFixed // fixed, float, double
	walkEnum
	walkOptLong  // union of null and an int or a long
	walkOptBytes // union of null and bytes or a string
	walkUnion
	walkArray
	walkMap
	walkCall // a record that contains itself: its own program
	walkUnknown

	// Ops of a HeaderLayout's programs, which read the header as they walk.
	walkHeader // the header record starts here
	walkTime   // the header's time, a long or a union of null and a long
	walkServer // the header's server, a string or a union of null and a string
	walkStop   // Read has what it needs
)

// errStop ends a walk once a Read has what it needs.
var errStop = errors.New("stop")

// compileWalk compiles s.
func compileWalk(s avro.Schema) *walkPlan {
	c := newWalkCompiler()
	c.p.root = c.prog(func(ops []walkOp) []walkOp { return c.value(ops, s) })
	c.finish()
	return c.p
}

// walkCompiler compiles schemas into a walkPlan. A record is inlined into
// its parent's program unless it contains itself: then the inner
// occurrences call a program of its own, which the depth bound covers.
type walkCompiler struct {
	p        *walkPlan
	inlining map[*avro.RecordSchema]bool
	called   map[*avro.RecordSchema]int32
	pending  []*avro.RecordSchema
}

func newWalkCompiler() *walkCompiler {
	return &walkCompiler{p: &walkPlan{}, inlining: map[*avro.RecordSchema]bool{}, called: map[*avro.RecordSchema]int32{}}
}

// prog adds a program of the ops body appends and returns its index.
func (c *walkCompiler) prog(body func([]walkOp) []walkOp) int32 {
	i := int32(len(c.p.progs))
	c.p.progs = append(c.p.progs, nil)
	c.p.progs[i] = body(nil)
	return i
}

// finish compiles the programs of the records that contain themselves.
func (c *walkCompiler) finish() {
	for len(c.pending) > 0 {
		r := c.pending[0]
		c.pending = c.pending[1:]
		var ops []walkOp
		for _, f := range r.Fields() {
			ops = c.value(ops, f.Type())
		}
		c.p.progs[c.called[r]] = ops
	}
}

func (c *walkCompiler) name(n string) int32 {
	c.p.names = append(c.p.names, n)
	return int32(len(c.p.names) - 1)
}

// value appends the ops of a value of s.
func (c *walkCompiler) value(ops []walkOp, s avro.Schema) []walkOp {
	s = deref(s)
	switch s := s.(type) {
	case *avro.NullSchema:
		return ops
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Null:
			return ops
		case avro.Boolean:
			return append(ops, walkOp{kind: walkBoolean})
		case avro.Int, avro.Long:
			return append(ops, walkOp{kind: walkLong})
		case avro.Float:
			return append(ops, walkOp{kind: walkFixed, n: 4})
		case avro.Double:
			return append(ops, walkOp{kind: walkFixed, n: 8})
		case avro.String, avro.Bytes:
			return append(ops, walkOp{kind: walkBytes})
		}
	case *avro.RecordSchema:
		if i, ok := c.called[s]; ok {
			return append(ops, walkOp{kind: walkCall, sub: i})
		}
		if c.inlining[s] {
			i := int32(len(c.p.progs))
			c.p.progs = append(c.p.progs, nil)
			c.called[s] = i
			c.pending = append(c.pending, s)
			return append(ops, walkOp{kind: walkCall, sub: i})
		}
		c.inlining[s] = true
		for _, f := range s.Fields() {
			ops = c.value(ops, f.Type())
		}
		delete(c.inlining, s)
		return ops
	case *avro.EnumSchema:
		return append(ops, walkOp{kind: walkEnum, n: int32(len(s.Symbols())), sub: c.name(s.FullName())})
	case *avro.FixedSchema:
		return append(ops, walkOp{kind: walkFixed, n: int32(s.Size())})
	case *avro.UnionSchema:
		if br, inner := nullableBranch(s); br >= 0 {
			switch inner.Type() {
			case avro.Int, avro.Long:
				return append(ops, walkOp{kind: walkOptLong, br: int8(br)})
			case avro.String, avro.Bytes:
				return append(ops, walkOp{kind: walkOptBytes, br: int8(br)})
			}
		}
		ts := s.Types()
		first := int32(len(c.p.branches))
		c.p.branches = append(c.p.branches, make([]int32, len(ts))...)
		for i, t := range ts {
			c.p.branches[int(first)+i] = c.prog(func(ops []walkOp) []walkOp { return c.value(ops, t) })
		}
		return append(ops, walkOp{kind: walkUnion, n: int32(len(ts)), sub: first})
	case *avro.ArraySchema:
		i := c.prog(func(ops []walkOp) []walkOp { return c.value(ops, s.Items()) })
		return append(ops, walkOp{kind: walkArray, sub: i, empty: len(c.p.progs[i]) == 0})
	case *avro.MapSchema:
		i := c.prog(func(ops []walkOp) []walkOp { return c.value(ops, s.Values()) })
		return append(ops, walkOp{kind: walkMap, sub: i})
	}
	return append(ops, walkOp{kind: walkUnknown, sub: c.name(string(s.Type()))})
}

// walker reads an Avro binary body just far enough: it skips values by
// their encodings and reads the few it needs. Every length is checked
// against what is left, so a malformed body costs an error, never a panic
// or an allocation of the size it claims. What a skip accepts is valid
// Avro binary of its schema, as strictly as a decoder checks it: booleans
// are 0 or 1, enum indexes and union branches in range, a block that
// states its byte size holds exactly its items, and a map has no key
// twice.
type walker struct {
	b []byte

	// What the header ops read.
	header, hasTime bool
	ms              int64
	server          []byte
}

func (w *walker) bad(what string) error {
	return fmt.Errorf("%w: %s", ErrBadBody, what)
}

func (w *walker) long() (int64, error) {
	b := w.b
	if len(b) > 0 && b[0] < 0x80 {
		// One byte, as most counts, lengths and branches are.
		u := int64(b[0])
		w.b = b[1:]
		return u>>1 ^ -(u & 1), nil
	}
	if len(b) > 1 && b[1] < 0x80 {
		u := int64(b[0]&0x7f) | int64(b[1])<<7
		w.b = b[2:]
		return u>>1 ^ -(u & 1), nil
	}
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, w.bad("a long that does not decode")
	}
	w.b = b[n:]
	return v, nil
}

func (w *walker) bytes() ([]byte, error) {
	b := w.b
	if len(b) > 0 && b[0] < 0x80 && b[0]&1 == 0 {
		// A length of one byte, not negative: a string shorter than 64.
		if l := int(b[0] >> 1); l < len(b) {
			w.b = b[1+l:]
			return b[1 : 1+l], nil
		}
		return nil, w.bad("a length past the end")
	}
	l, err := w.long()
	if err != nil {
		return nil, err
	}
	if l < 0 || l > int64(len(w.b)) {
		return nil, w.bad("a length past the end")
	}
	v := w.b[:l]
	w.b = w.b[l:]
	return v, nil
}

// branch reads the index of a union of null and one other type and
// reports whether the value is of branch br (else it is null). br -1 is
// no union: the value is there.
func (w *walker) branch(br int8) (bool, error) {
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
	return i == int64(br), nil
}

// run walks the values of ops.
func (w *walker) run(p *walkPlan, ops []walkOp, depth int) error {
	if depth > maxSkipDepth {
		return w.bad("values nested too deep")
	}
	for i := range ops {
		op := &ops[i]
		switch op.kind {
		case walkLong:
			if b := w.b; len(b) > 0 && b[0] < 0x80 {
				w.b = b[1:]
			} else if _, err := w.long(); err != nil {
				return err
			}
		case walkBytes:
			if b := w.b; len(b) > 0 && b[0] < 0x80 && b[0]&1 == 0 && int(b[0]>>1) < len(b) {
				w.b = b[1+b[0]>>1:] // a string shorter than 64, as most are
			} else if _, err := w.bytes(); err != nil {
				return err
			}
		case walkBoolean:
			if len(w.b) == 0 || w.b[0] > 1 {
				return w.bad("a boolean that is neither 0 nor 1")
			}
			w.b = w.b[1:]
		case walkFixed:
			if int(op.n) > len(w.b) {
				return w.bad("a fixed value past the end")
			}
			w.b = w.b[op.n:]
		case walkEnum:
			n, err := w.long()
			if err != nil {
				return err
			}
			if n < 0 || n >= int64(op.n) {
				return w.bad(fmt.Sprintf("enum %s index %d out of range", p.names[op.sub], n))
			}
		case walkOptLong, walkOptBytes:
			var ok bool
			var err error
			if b := w.b; len(b) > 0 && (b[0] == 0 || b[0] == 2) {
				ok, w.b = int8(b[0]>>1) == op.br, b[1:] // branch 0 or 1 in one byte
			} else if ok, err = w.branch(op.br); err != nil {
				return err
			}
			if !ok {
				continue // null
			}
			if op.kind == walkOptLong {
				_, err = w.long()
			} else {
				_, err = w.bytes()
			}
			if err != nil {
				return err
			}
		case walkUnion:
			n, err := w.long()
			if err != nil {
				return err
			}
			if n < 0 || n >= int64(op.n) {
				return w.bad("a union branch out of range")
			}
			if err := w.run(p, p.progs[p.branches[int64(op.sub)+n]], depth+1); err != nil {
				return err
			}
		case walkArray:
			if err := w.blocks(p, op, nil, depth); err != nil {
				return err
			}
		case walkMap:
			var keys mapKeys
			if err := w.blocks(p, op, &keys, depth); err != nil {
				return err
			}
		case walkCall:
			if err := w.run(p, p.progs[op.sub], depth+1); err != nil {
				return err
			}
		case walkHeader:
			w.header = true
		case walkTime:
			ok, err := w.branch(op.br)
			if err != nil {
				return err
			}
			if ok {
				if w.ms, err = w.long(); err != nil {
					return err
				}
				w.hasTime = true
			}
		case walkServer:
			ok, err := w.branch(op.br)
			if err != nil {
				return err
			}
			if ok {
				if w.server, err = w.bytes(); err != nil {
					return err
				}
			}
		case walkStop:
			return errStop
		default:
			return w.bad(fmt.Sprintf("a value of type %s", p.names[op.sub]))
		}
	}
	return nil
}

// blocks skips the blocks of an array, or of a map when keys is not nil:
// a count, negative when a byte size follows, until 0. A block with a
// size is still walked item by item, and must end exactly there: skipping
// it whole would let a body that no decoder reads pass.
func (w *walker) blocks(p *walkPlan, op *walkOp, keys *mapKeys, depth int) error {
	item := p.progs[op.sub]
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
		if op.empty {
			if end >= 0 && end != len(w.b) {
				return w.bad("a block size that does not match its items")
			}
			continue // items of no bytes: nothing to skip, however many
		}
		if n > int64(len(w.b)) {
			return w.bad("an array or map longer than the body")
		}
		for range n {
			if keys != nil {
				k, err := w.bytes()
				if err != nil {
					return err
				}
				if !keys.add(k) {
					return w.bad(fmt.Sprintf("map key %q twice", k))
				}
			}
			if err := w.run(p, item, depth+1); err != nil {
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
