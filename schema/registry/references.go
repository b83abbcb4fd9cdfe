package registry

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Schema references, as Confluent has them: a schema names types defined
// in other registered schemas, each reference a {name, subject, version}.
// The referenced versions are resolved when the schema is registered,
// looked up or replayed, transitively, and their types are what the
// schema's names mean. A reference is part of a schema's identity: the
// same text with other references is another schema, with another id.
//
// A version stays while anything references it: deleting it, soft or
// hard, is refused with 42206 until the schemas that use it are deleted
// (hard-deleted, for a hard delete of what they reference), because a
// record written with them could not be decoded without it.

// schemaRef is one reference.
type schemaRef struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// maxReferences bounds the referenced versions a schema reaches, directly
// or through others: each costs a parse on every register, lookup and
// replay of the schema.
const maxReferences = 256

// decodeRefs checks the references of a request or a record.
func decodeRefs(raw []json.RawMessage) ([]schemaRef, error) {
	if len(raw) > maxReferences {
		return nil, fmt.Errorf("%d references, more than the %d a schema may have", len(raw), maxReferences)
	}
	refs := make([]schemaRef, 0, len(raw))
	names := make(map[string]bool, len(raw))
	for i, r := range raw {
		var ref schemaRef
		if err := json.Unmarshal(r, &ref); err != nil {
			return nil, fmt.Errorf("reference %d is not an object {\"name\", \"subject\", \"version\"}: %v", i+1, err)
		}
		switch {
		case strings.TrimSpace(ref.Name) == "":
			return nil, fmt.Errorf("reference %d has no name", i+1)
		case !validSubject(ref.Subject):
			return nil, fmt.Errorf("reference %q names no valid subject", ref.Name)
		case !validNumber(ref.Version):
			return nil, fmt.Errorf("reference %q has version %d; give the version number (1..2^31-1) it refers to", ref.Name, ref.Version)
		case names[ref.Name]:
			return nil, fmt.Errorf("reference %q is given twice", ref.Name)
		}
		names[ref.Name] = true
		refs = append(refs, ref)
	}
	return refs, nil
}

// decodeRecordRefs reads the references field of a SCHEMA record.
func decodeRecordRefs(raw json.RawMessage) ([]schemaRef, error) {
	if isJSONNull(raw) {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("references are not a JSON array: %v", err)
	}
	return decodeRefs(list)
}

// refsNotFound is a reference to a version this node does not have (yet).
type refsNotFound struct{ ref schemaRef }

func (e *refsNotFound) Error() string {
	return fmt.Sprintf("reference %q: subject %q has no version %d", e.ref.Name, e.ref.Subject, e.ref.Version)
}

// refDep is a referenced version as a schema's parser needs it: the
// name its referrer gives it (an Avro type, a JSON "$ref" target, a
// Protobuf import path), its text and type.
type refDep struct {
	name, text, typ string
	alias           bool // a version reached before under another name
}

// depTexts returns the texts of deps, for Avro, which finds names inside.
func depTexts(deps []refDep) []string {
	out := make([]string, len(deps))
	out = out[:0]
	for _, d := range deps {
		if !d.alias {
			out = append(out, d.text)
		}
	}
	return out
}

// resolveRefs returns the versions refs reach, each after the ones it
// references itself, within lim: at most maxReferences of them, nested at
// most lim.maxDepth deep, lim.maxBytes in all.
//
// An unqualified subject in a reference is one of ctx, the referring
// schema's context (context.go).
func (st *state) resolveRefs(ctx string, refs []schemaRef, lim schemaLimits) ([]refDep, error) {
	var (
		out   []refDep
		bytes int
		seen  = map[schemaRef]bool{}
	)
	var walk func(ctx string, refs []schemaRef, depth int) error
	walk = func(ctx string, refs []schemaRef, depth int) error {
		if depth > lim.maxDepth {
			return fmt.Errorf("references nest more than %d deep (the schema depth limit, --schema-max-depth)", lim.maxDepth)
		}
		for _, ref := range refs {
			subject := qualify(ctx, ref.Subject)
			at := schemaRef{Subject: subject, Version: ref.Version}
			if seen[at] {
				if i := slices.IndexFunc(out, func(d refDep) bool { return d.name == ref.Name }); i < 0 {
					if sch := st.versionSchema(subject, ref.Version); sch != nil {
						out = append(out, refDep{name: ref.Name, text: sch.schema.Text, typ: sch.schema.Type, alias: true})
					}
				}
				continue
			}
			seen[at] = true
			if len(seen) > maxReferences {
				return fmt.Errorf("the schema reaches more than %d referenced versions", maxReferences)
			}
			sch := st.versionSchema(subject, ref.Version)
			if sch == nil {
				return &refsNotFound{ref}
			}
			if err := walk(contextOf(subject), sch.refs, depth+1); err != nil {
				return err
			}
			if bytes += len(sch.schema.Text); bytes > lim.maxBytes {
				return fmt.Errorf("the referenced schemas are larger than %d bytes together (the schema size limit, --schema-max-bytes)", lim.maxBytes)
			}
			out = append(out, refDep{name: ref.Name, text: sch.schema.Text, typ: sch.schema.Type})
		}
		return nil
	}
	return out, walk(ctx, refs, 1)
}

// versionSchema returns the schema of a subject's version, or nil.
func (st *state) versionSchema(subject string, num int) *stored {
	sub := st.subjects[subject]
	if sub == nil {
		return nil
	}
	v := sub.find(num)
	if v == nil {
		return nil
	}
	return st.schemaOf(subject, v)
}

// refsKey is what references add to a schema's key, so that they are
// part of its identity.
func refsKey(refs []schemaRef) string {
	if len(refs) == 0 {
		return ""
	}
	return "\x00references:" + string(mustJSON(refs))
}

// refsJSON is how references go into a SCHEMA record: absent when none.
func refsJSON(refs []schemaRef) json.RawMessage {
	if len(refs) == 0 {
		return nil
	}
	return mustJSON(refs)
}

// referencedBy returns the ids of the schemas that reference a version.
// A referring schema's unqualified reference names a subject of its own
// context.
func (st *state) referencedBy(subject string, num int) []int {
	out := []int{}
	st.forSpaces(func(ctx string, sp *idSpace) {
		for id, sch := range sp.schemas {
			for _, r := range sch.refs {
				if qualify(ctx, r.Subject) == subject && r.Version == num {
					out = append(out, id)
					break
				}
			}
		}
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// notReferenced refuses to delete a version that a schema references.
func (st *state) notReferenced(subject string, num int) *apiError {
	if ids := st.referencedBy(subject, num); len(ids) > 0 {
		return errReferenceExists(subject, num, ids)
	}
	return nil
}

// GET /subjects/{subject}/versions/{version}/referencedby lists the ids of
// the schemas that reference the version.
func (s *Server) referencedBy(w http.ResponseWriter, r *http.Request) {
	subject, aerr := subjectParam(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	ref, aerr := parseVersion(r.PathValue("version"))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var ids []int
	err := s.view(r.Context(), func(st *state) error {
		v, aerr := st.findVersion(subject, ref, true)
		if aerr != nil {
			return aerr
		}
		ids = st.referencedBy(subject, v.num)
		return nil
	})
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeJSON(w, ids)
}

// GET /schemas/ids/{id}/referencedby lists the ids of the schemas that
// reference any version holding schema id.
func (s *Server) referencedByID(w http.ResponseWriter, r *http.Request) {
	var ids []int
	err := s.idRequest(r, func(st *state, ctx string, sch *stored) error {
		ids = []int{}
		for _, u := range st.usesOf(ctx, sch.id, true) {
			ids = append(ids, st.referencedBy(u.Subject, u.Version)...)
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		return nil
	})
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeJSON(w, ids)
}
