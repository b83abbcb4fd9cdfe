package registry

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Handlers for /schemas: schemas by global id, which is what every
// deserializer calls.

// idRequest resolves the {id} of a request to a stored schema. An id that
// is not a number cannot name a schema, so it gets the same 40403.
//
// Ids are per context (context.go): ?subject= names the context, by a
// qualified subject (":.ctx:s", or ":.ctx:" alone); without one, the
// default context. As in Confluent, an unqualified subject that does not
// use the id in the default context is looked for in the other contexts.
func (s *Server) idRequest(r *http.Request, fn func(st *state, ctx string, sch *stored) error) error {
	raw := r.PathValue("id")
	id, err := strconv.Atoi(raw)
	if err != nil {
		return errSchemaIDNotFound(raw)
	}
	subject := r.URL.Query().Get("subject")
	return s.view(r.Context(), func(st *state) error {
		ctx := contextOf(subject)
		sch := st.spaceFor(subject).schemas[id]
		if ctx == "" && subject != "" && !st.uses(subject, id) {
			st.forSpaces(func(c string, sp *idSpace) {
				if c != "" && sp.schemas[id] != nil && st.uses(qualify(c, subject), id) {
					ctx, sch = c, sp.schemas[id]
				}
			})
		}
		if sch == nil {
			return errSchemaIDNotFound(raw)
		}
		return fn(st, ctx, sch)
	})
}

// uses reports whether a version of subject has schema id.
func (st *state) uses(subject string, id int) bool {
	if sub := st.subjects[subject]; sub != nil {
		for _, v := range sub.versions {
			if v.id == id {
				return true
			}
		}
	}
	return false
}

// GET /schemas/ids/{id} answers {"schema": "..."}. A schema stays here
// while any version uses it, soft-deleted or not, so old data can always
// be read.
func (s *Server) schemaByID(w http.ResponseWriter, r *http.Request) {
	var out struct {
		SchemaType string      `json:"schemaType,omitempty"`
		Schema     string      `json:"schema"`
		References []schemaRef `json:"references,omitempty"`
		Metadata   *metadata   `json:"metadata,omitempty"`
		RuleSet    *ruleSet    `json:"ruleSet,omitempty"`
	}
	if err := s.idRequest(r, func(_ *state, _ string, sch *stored) error {
		out.SchemaType, out.Schema, out.References = sch.schema.showType(), sch.schema.Text, sch.refs
		out.Metadata, out.RuleSet = sch.schema.contract.metadataOrNil(), sch.schema.contract.ruleSetOrNil()
		if r.URL.Query().Get("format") == "serialized" && sch.schema.proto != nil {
			out.Schema = sch.schema.proto.serialized(sch.schema.Text)
		}
		return nil
	}); err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeJSON(w, out)
}

// GET /schemas/ids/{id}/schema answers with the schema itself.
func (s *Server) schemaTextByID(w http.ResponseWriter, r *http.Request) {
	var text string
	if err := s.idRequest(r, func(_ *state, _ string, sch *stored) error { text = sch.schema.Text; return nil }); err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeRawSchema(w, text)
}

type subjectVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// usesOf lists the versions of a context using schema id, ordered by
// subject and version.
func (st *state) usesOf(ctx string, id int, deleted bool) []subjectVersion {
	out := []subjectVersion{}
	for name, sub := range st.subjects {
		if contextOf(name) != ctx {
			continue
		}
		for _, v := range sub.versions {
			if v.id == id && (!v.deleted || deleted) {
				out = append(out, subjectVersion{name, v.num})
			}
		}
	}
	slices.SortFunc(out, func(a, b subjectVersion) int {
		if c := strings.Compare(a.Subject, b.Subject); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
	return out
}

// GET /schemas/ids/{id}/versions?deleted=
func (s *Server) versionsByID(w http.ResponseWriter, r *http.Request) {
	var out []subjectVersion
	err := s.idRequest(r, func(st *state, ctx string, sch *stored) error {
		out = st.usesOf(ctx, sch.id, boolParam(r, "deleted"))
		return nil
	})
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeJSON(w, out)
}

// GET /schemas/ids/{id}/subjects?deleted=
func (s *Server) subjectsByID(w http.ResponseWriter, r *http.Request) {
	names := []string{}
	err := s.idRequest(r, func(st *state, ctx string, sch *stored) error {
		for _, u := range st.usesOf(ctx, sch.id, boolParam(r, "deleted")) {
			if len(names) == 0 || names[len(names)-1] != u.Subject {
				names = append(names, u.Subject)
			}
		}
		return nil
	})
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeJSON(w, names)
}

// GET /schemas?subjectPrefix=&deleted=&latestOnly= lists versions with
// their schemas, ordered by subject and version.
func (s *Server) listSchemas(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("subjectPrefix")
	deleted, latestOnly := boolParam(r, "deleted"), boolParam(r, "latestOnly")
	out := []subjectSchema{}
	s.view(r.Context(), func(st *state) error {
		for name, sub := range st.subjects {
			if !matchPrefix(name, prefix) {
				continue
			}
			var shown []subjectSchema
			for _, v := range sub.versions {
				if !v.deleted || deleted {
					shown = append(shown, st.show(name, v))
				}
			}
			if latestOnly && len(shown) > 0 {
				shown = shown[len(shown)-1:]
			}
			out = append(out, shown...)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b subjectSchema) int {
		if c := strings.Compare(a.Subject, b.Subject); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
	writeJSON(w, out)
}
