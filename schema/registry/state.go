package registry

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// state is what a node knows after applying a prefix of the log. It does no
// I/O: the node feeds it records and asks it questions under its lock.
//
// Applying is deterministic and first-writer-wins, which is how nodes that
// write concurrently still agree: a record that claims a version slot
// already taken, an id already bound to another schema, or a new id for a
// schema that has one, loses and is skipped on every node alike; its
// writer sees that when it reads its own record back, and tries again.
type state struct {
	subjects map[string]*subject
	// idSpace holds the default context's schema ids; ctxs those of the
	// other contexts (context.go).
	idSpace
	ctxs    map[string]*idSpace
	configs map[string]string // subject → level; "" is the global level
	groups  map[string]string // subject → compatibility group (contract.go); "" global
	modes   map[string]string // subject → mode; "" is the global mode (mode.go)
	// idFloor bounds the ids that records compaction removed: see apply.
	idFloor int
	next    int64        // offset of the next record to apply
	limits  schemaLimits // bounds schema texts before they are parsed
}

type subject struct {
	versions []*version // ascending by number
}

type version struct {
	num     int
	id      int
	deleted bool // soft-deleted: hidden unless asked for, still decodable
}

// stored is a schema with the number of versions, soft-deleted or not,
// that use it; it is forgotten when the last one is hard-deleted.
type stored struct {
	id     int
	schema *schemaDoc
	refs   []schemaRef // references.go
	uses   int
}

func newState() *state {
	return &state{
		subjects: make(map[string]*subject),
		idSpace:  *newIDSpace(),
		ctxs:     make(map[string]*idSpace),
		configs:  make(map[string]string),
		groups:   make(map[string]string),
		modes:    make(map[string]string),
		limits:   defaultLimits,
	}
}

// nextID is the id a new schema of the default context gets.
func (st *state) nextID() int { return st.nextIDIn("") }

// nextIDIn is the id a new schema of a context gets: above every id given
// out there (ids are never reused, even after hard deletes), and above
// the floor, which stands for ids records compaction removed.
func (st *state) nextIDIn(ctx string) int {
	m := 0
	if sp := st.space(ctx); sp != nil {
		m = sp.maxID
	}
	return min(max(m, st.idFloor), maxID31) + 1
}

// maxID31 is the largest schema id or version: the envelope carries the id
// in 4 bytes, and Confluent's clients read both as Java ints.
const maxID31 = 1<<31 - 1

func validNumber(n int) bool { return n >= 1 && n <= maxID31 }

// validSubject is the rule subjectParam applies to requests. A name that
// is not UTF-8 could not be written: JSON would store another name, and
// the writer would never find its own record.
func validSubject(s string) bool {
	return s != "" && utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// apply applies one record and returns why it was skipped, or "".
//
// Anything may be on the topic — a record from a buggy or foreign writer,
// damaged bytes — so every record is checked before it changes the state:
// ids and versions in 1..2^31-1, subjects the API could name, schemas that
// parse within the limits, keys and values that agree. A record that fails
// is skipped whole; it can never move the id counter or remove a live
// version.
func (st *state) apply(r Record) string {
	// _schemas is compacted: the records of a hard-deleted version go,
	// and with them maybe the only trace of its schema id. Each missing
	// offset held at most one record, so at most one id was lost per
	// missing offset; raising the floor by the gap keeps every id ever
	// given out at or below nextID, so no id is reused and a later
	// record's id is not taken for a forged jump.
	if gap := r.Offset - st.next; gap > 0 {
		st.idFloor = st.highestID() + int(min(gap, maxID31))
	}
	st.next = r.Offset + 1
	var k recordKey
	if err := json.Unmarshal(r.Key, &k); err != nil {
		return fmt.Sprintf("key is not JSON of the expected shape: %v", err)
	}
	switch k.Type {
	case keySchema:
		if k.Subject == nil || !validSubject(*k.Subject) {
			return "schema record without a valid subject"
		}
		if !validNumber(k.Version) {
			return fmt.Sprintf("schema record for subject %q has version %d, outside 1..2^31-1", *k.Subject, k.Version)
		}
		if r.Value == nil {
			return st.hardDelete(*k.Subject, k.Version)
		}
		var v schemaValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Sprintf("schema value is not JSON of the expected shape: %v", err)
		}
		if v.Subject != *k.Subject || v.Version != k.Version {
			return fmt.Sprintf("schema value names subject %q version %d but its key names subject %q version %d", v.Subject, v.Version, *k.Subject, k.Version)
		}
		if !validNumber(v.ID) {
			return fmt.Sprintf("subject %q version %d has schema id %d, outside 1..2^31-1", v.Subject, v.Version, v.ID)
		}
		return st.applySchema(*k.Subject, k.Version, v)
	case keyConfig:
		name := ""
		if k.Subject != nil {
			name = *k.Subject
		}
		if r.Value == nil {
			delete(st.configs, name)
			delete(st.groups, name)
			return ""
		}
		var v configValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Sprintf("config value is not JSON: %v", err)
		}
		level, ok := parseLevel(v.Level)
		if !ok && (v.Level != "" || v.Group == "") {
			return fmt.Sprintf("unknown compatibility level %q", v.Level)
		}
		// A CONFIG record holds the whole config: what it lacks is unset.
		if ok {
			st.configs[name] = level
		} else {
			delete(st.configs, name)
		}
		if v.Group != "" {
			st.groups[name] = v.Group
		} else {
			delete(st.groups, name)
		}
	case keyMode:
		name := ""
		if k.Subject != nil {
			name = *k.Subject
		}
		return st.applyMode(name, r.Value)
	case keyNoop:
		if k.IDFloor == 0 {
			return ""
		}
		if !validNumber(k.IDFloor) {
			return fmt.Sprintf("id floor %d is outside 1..2^31-1", k.IDFloor)
		}
		st.idFloor = max(st.idFloor, k.IDFloor)
	case keyDeleteSubject:
		if r.Value == nil {
			return ""
		}
		var v deleteSubjectValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Sprintf("delete-subject value is not JSON of the expected shape: %v", err)
		}
		if k.Subject == nil || *k.Subject != v.Subject || !validNumber(v.Version) {
			return fmt.Sprintf("delete-subject record for subject %q up to version %d does not match its key or has a version outside 1..2^31-1", v.Subject, v.Version)
		}
		if s := st.subjects[v.Subject]; s != nil {
			for _, ver := range s.versions {
				if ver.num <= v.Version {
					ver.deleted = true
				}
			}
		}
	}
	return ""
}

func (st *state) applySchema(name string, num int, v schemaValue) string {
	if _, ok := parseType(v.SchemaType); !ok {
		return fmt.Sprintf("subject %q version %d is a %s schema; only AVRO, JSON and PROTOBUF are served", name, num, v.SchemaType)
	}
	// In IMPORT mode a registration carries the id and version it had in
	// the registry it is copied from: versions may arrive in any order and
	// ids ahead of the counter, which then moves past them.
	mode := st.mode(name)
	importing := mode == modeImport
	s := st.subjects[name]
	if s != nil {
		if ver := s.find(num); ver != nil {
			// An update of the deleted flag repeats the version's id and
			// schema; anything else is a concurrent registration that lost
			// the slot — possibly one that picked the same new id.
			if ver.id != v.ID || !st.sameSchema(name, ver.id, v.Schema) {
				return fmt.Sprintf("subject %q version %d is already taken by schema id %d; a concurrent registration lost", name, num, ver.id)
			}
			ver.deleted = v.Deleted
			return ""
		}
		if num <= s.latest(true) && !importing {
			return fmt.Sprintf("subject %q version %d is below its latest version %d; a concurrent write lost", name, num, s.latest(true))
		}
	}
	if v.Deleted {
		return "" // soft delete of a version hard-deleted meanwhile
	}
	if readOnly(mode) {
		// Whoever wrote this decided before it read the mode change; every
		// node skips it alike, and the writer is told when it reads back.
		return fmt.Sprintf("subject %q version %d was written while the subject is in %s mode", name, num, mode)
	}
	refs, err := decodeRecordRefs(v.References)
	if err != nil {
		return fmt.Sprintf("subject %q version %d: %v", name, num, err)
	}
	ctx := contextOf(name)
	deps, err := st.resolveRefs(ctx, refs, st.limits)
	if err != nil {
		return fmt.Sprintf("subject %q version %d: %v", name, num, err)
	}
	parsed, err := parseSchema(v.SchemaType, v.Schema, st.limits, refs, deps)
	if err != nil {
		return fmt.Sprintf("subject %q version %d: schema does not parse: %v", name, num, err)
	}
	c, aerr := decodeContract(v.Metadata, v.RuleSet, false)
	if aerr != nil {
		return fmt.Sprintf("subject %q version %d: %s", name, num, aerr.Message)
	}
	parsed = parsed.withContract(c)
	sp := st.keepSpace(name)
	if _, known := sp.schemas[v.ID]; !known && v.ID > st.nextIDIn(ctx) && !importing {
		// Registries give a new schema the next id, so a record that jumps
		// ahead did not come from one; applied, it would use up the ids
		// (a forged id 2^31-1 leaves none the envelope can carry).
		return fmt.Sprintf("subject %q version %d claims new schema id %d, ahead of the next id %d", name, num, v.ID, st.nextIDIn(ctx))
	}
	if have, ok := sp.schemas[v.ID]; ok && have.schema.Key != parsed.Key {
		return fmt.Sprintf("schema id %d is taken by another schema; a concurrent registration under subject %q lost", v.ID, name)
	}
	if id, ok := sp.byKey[parsed.Key]; ok && id != v.ID {
		return fmt.Sprintf("the schema already has id %d; a concurrent registration of it as id %d under subject %q lost", id, v.ID, name)
	}
	if s == nil {
		s = &subject{}
		st.subjects[name] = s
	}
	s.insert(&version{num: num, id: v.ID})
	sch := sp.schemas[v.ID]
	if sch == nil {
		sch = &stored{id: v.ID, schema: parsed, refs: refs}
		sp.schemas[v.ID] = sch
		sp.byKey[parsed.Key] = v.ID
	}
	sch.uses++
	sp.maxID = max(sp.maxID, v.ID)
	return ""
}

// sameSchema reports whether text is the schema stored under id in the
// context of subject.
func (st *state) sameSchema(subject string, id int, text string) bool {
	have := st.spaceFor(subject).schemas[id]
	if have == nil {
		return false
	}
	if have.schema.Text == text {
		return true
	}
	deps, err := st.resolveRefs(contextOf(subject), have.refs, st.limits)
	if err != nil {
		return false
	}
	p, err := parseSchema(have.schema.Type, text, st.limits, have.refs, deps)
	return err == nil && p.withContract(have.schema.contract).Key == have.schema.Key
}

// hardDelete applies a tombstone. Only a soft-deleted version may be
// hard-deleted, as the API requires: a tombstone for a live version did not
// come from a registry, and is refused.
func (st *state) hardDelete(name string, num int) string {
	s := st.subjects[name]
	if s == nil {
		return ""
	}
	i := slices.IndexFunc(s.versions, func(v *version) bool { return v.num == num })
	if i < 0 {
		return ""
	}
	if !s.versions[i].deleted {
		return fmt.Sprintf("tombstone for subject %q version %d, which is live: a version is soft-deleted before it is hard-deleted", name, num)
	}
	if ids := st.referencedBy(name, num); len(ids) > 0 {
		return fmt.Sprintf("tombstone for subject %q version %d, which schema ids %v reference", name, num, ids)
	}
	id := s.versions[i].id
	s.versions = slices.Delete(s.versions, i, i+1)
	if len(s.versions) == 0 {
		delete(st.subjects, name)
	}
	sp := st.spaceFor(name)
	if sch := sp.schemas[id]; sch != nil {
		if sch.uses--; sch.uses == 0 {
			delete(sp.schemas, id)
			delete(sp.byKey, sch.schema.Key)
		}
	}
	return ""
}

// insert adds v in version order; outside IMPORT mode it is always last.
func (s *subject) insert(v *version) {
	i, _ := slices.BinarySearchFunc(s.versions, v.num, func(a *version, n int) int { return a.num - n })
	s.versions = slices.Insert(s.versions, i, v)
}

func (s *subject) find(num int) *version {
	for _, v := range s.versions {
		if v.num == num {
			return v
		}
	}
	return nil
}

// latest returns the highest version number, counting soft-deleted
// versions if withDeleted, or 0.
func (s *subject) latest(withDeleted bool) int {
	for i := len(s.versions) - 1; i >= 0; i-- {
		if withDeleted || !s.versions[i].deleted {
			return s.versions[i].num
		}
	}
	return 0
}

// live reports whether any version is not soft-deleted.
func (s *subject) live() bool { return s.latest(false) > 0 }

// level returns the compatibility level that applies to a subject.
//
// The level is the subject's own, else its context's (context.go; for the
// default context, the global level), else that of ":.__GLOBAL:", else
// dflt.
func (st *state) level(name, dflt string) string {
	for _, n := range scopes(name) {
		if l, ok := st.configs[n]; ok {
			return l
		}
	}
	return dflt
}

// scopes lists where a subject's config or mode is looked for, in order.
func scopes(name string) []string {
	ctx := contextKey(contextOf(name))
	if name == ctx {
		return []string{ctx, globalContext}
	}
	return []string{name, ctx, globalContext}
}

// previous returns the live versions of a subject, oldest first.
func (st *state) previous(name string) []previous {
	s := st.subjects[name]
	if s == nil {
		return nil
	}
	var out []previous
	for _, v := range s.versions {
		if !v.deleted {
			out = append(out, previous{version: v.num, schema: st.schemaOf(name, v).schema})
		}
	}
	return out
}
