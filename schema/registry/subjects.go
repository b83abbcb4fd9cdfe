package registry

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Handlers for /subjects: registration, lookup, versions and deletes.

// schemaRequest is the body of register, lookup and compatibility checks.
type schemaRequest struct {
	Schema     *string           `json:"schema"`
	SchemaType string            `json:"schemaType"`
	References []json.RawMessage `json:"references"`
	ID         int               `json:"id"`
	Version    int               `json:"version"`
	Metadata   json.RawMessage   `json:"metadata"`
	RuleSet    json.RawMessage   `json:"ruleSet"`
}

// parse validates the request's schema against deps, the texts of the
// schemas its references reach (references.go). Everything the registry
// would otherwise have to drop silently is refused instead.
func (req *schemaRequest) parse(lim schemaLimits, refs []schemaRef, deps []refDep) (*schemaDoc, *apiError) {
	c, aerr := decodeContract(req.Metadata, req.RuleSet, true)
	if aerr != nil {
		return nil, aerr
	}
	if req.Schema == nil || strings.TrimSpace(*req.Schema) == "" {
		return nil, errInvalidSchema("empty schema: the request needs a \"schema\" field holding the schema as a JSON string")
	}
	sch, err := parseSchema(req.SchemaType, *req.Schema, lim, refs, deps)
	if err != nil {
		return nil, errInvalidSchema("%v", err)
	}
	return sch.withContract(c), nil
}

func isJSONNull(m json.RawMessage) bool {
	t := strings.TrimSpace(string(m))
	return t == "" || t == "null" || t == "{}"
}

// subjectSchema is a version as the API shows it.
type subjectSchema struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	Schema     string      `json:"schema"`
	References []schemaRef `json:"references,omitempty"`
	Metadata   *metadata   `json:"metadata,omitempty"`
	RuleSet    *ruleSet    `json:"ruleSet,omitempty"`
}

func (st *state) show(subject string, v *version) subjectSchema {
	sch := st.schemaOf(subject, v)
	c := sch.schema.contract
	return subjectSchema{Subject: subject, Version: v.num, ID: v.id, SchemaType: sch.schema.showType(), Schema: sch.schema.Text, References: sch.refs,
		Metadata: c.metadataOrNil(), RuleSet: c.ruleSetOrNil()}
}

// GET /subjects?deleted=&deletedOnly=&subjectPrefix=
func (s *Server) listSubjects(w http.ResponseWriter, r *http.Request) {
	deleted, deletedOnly := boolParam(r, "deleted"), boolParam(r, "deletedOnly")
	prefix := r.URL.Query().Get("subjectPrefix")
	names := []string{}
	s.view(r.Context(), func(st *state) error {
		for name, sub := range st.subjects {
			if !matchPrefix(name, prefix) {
				continue
			}
			live := sub.live()
			if (deletedOnly && !live) || (!deletedOnly && (live || deleted)) {
				names = append(names, name)
			}
		}
		return nil
	})
	slices.Sort(names)
	writeJSON(w, names)
}

// GET /subjects/{subject}/versions?deleted=&deletedOnly=
func (s *Server) listVersions(w http.ResponseWriter, r *http.Request) {
	subject, aerr := subjectParam(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	deleted, deletedOnly := boolParam(r, "deleted"), boolParam(r, "deletedOnly")
	var nums []int
	err := s.view(r.Context(), func(st *state) error {
		nums = []int{}
		sub := st.subjects[subject]
		if sub == nil || !(sub.live() || deleted || deletedOnly) {
			return errSubjectNotFound(subject)
		}
		for _, v := range sub.versions {
			if (deletedOnly && v.deleted) || (!deletedOnly && (!v.deleted || deleted)) {
				nums = append(nums, v.num)
			}
		}
		return nil
	})
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeJSON(w, nums)
}

// findVersion resolves a version reference within a subject, with
// Confluent's errors: 40401 when the subject has no (visible) versions,
// 40402 when it has, but not this one.
func (st *state) findVersion(subject string, ref versionRef, deleted bool) (*version, *apiError) {
	sub := st.subjects[subject]
	if sub == nil || !(sub.live() || deleted) {
		return nil, errSubjectNotFound(subject)
	}
	num := ref.num
	if ref.latest {
		num = sub.latest(deleted)
	}
	v := sub.find(num)
	if v == nil || (v.deleted && !deleted) {
		return nil, errVersionNotFound(num)
	}
	return v, nil
}

// versionRequest resolves the subject and version of a request.
func (s *Server) versionRequest(r *http.Request) (subjectSchema, *apiError) {
	subject, aerr := subjectParam(r)
	if aerr != nil {
		return subjectSchema{}, aerr
	}
	ref, aerr := parseVersion(r.PathValue("version"))
	if aerr != nil {
		return subjectSchema{}, aerr
	}
	deleted := boolParam(r, "deleted")
	var out subjectSchema
	err := s.view(r.Context(), func(st *state) error {
		v, aerr := st.findVersion(subject, ref, deleted)
		if aerr != nil {
			return aerr
		}
		out = st.show(subject, v)
		if doc := st.schemaOf(subject, v).schema; doc.proto != nil && r.URL.Query().Get("format") == "serialized" {
			out.Schema = doc.proto.serialized(doc.Text) // as Confluent's Protobuf clients ask
		}
		return nil
	})
	if err != nil {
		return subjectSchema{}, err.(*apiError)
	}
	return out, nil
}

// GET /subjects/{subject}/versions/{version}?deleted=
func (s *Server) getVersion(w http.ResponseWriter, r *http.Request) {
	ss, aerr := s.versionRequest(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, ss)
}

// GET /subjects/{subject}/versions/{version}/schema returns the schema
// itself, not wrapped in an object.
func (s *Server) getVersionSchema(w http.ResponseWriter, r *http.Request) {
	ss, aerr := s.versionRequest(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeRawSchema(w, ss.Schema)
}

func writeRawSchema(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(text))
}

// readSchema reads and parses the schema in a request body.
//
// A body may be 8 MiB and parsing a schema within the limits allocates
// tens of megabytes, so at most cap(s.parses) requests read and parse at
// once: what they hold together is bounded however many clients send
// schemas at the same moment. The slot is released before the request
// goes on to the store or a compatibility check, which have bounds of
// their own.
func (s *Server) readSchema(w http.ResponseWriter, r *http.Request, subject string) (schemaRequest, *schemaDoc, []schemaRef, *apiError) {
	var req schemaRequest
	wait := time.NewTimer(s.cfg.SyncTimeout)
	defer wait.Stop()
	select {
	case s.parses <- struct{}{}:
		defer func() { <-s.parses }()
	case <-wait.C:
		return req, nil, nil, errBusy(cap(s.parses), s.cfg.SyncTimeout)
	case <-r.Context().Done():
		return req, nil, nil, errBusy(cap(s.parses), s.cfg.SyncTimeout)
	}
	if aerr := readJSON(w, r, &req); aerr != nil {
		return req, nil, nil, aerr
	}
	refs, err := decodeRefs(req.References)
	if err != nil {
		return req, nil, nil, errInvalidSchema("%v", err)
	}
	var deps []refDep
	if len(refs) > 0 {
		// Only the texts are gathered under the lock; they are parsed
		// outside it, with the schema, within this request's parse slot.
		err := s.view(r.Context(), func(st *state) error {
			var err error
			if deps, err = st.resolveRefs(contextOf(subject), refs, s.cfg.limits()); err != nil {
				if _, ok := err.(*refsNotFound); ok {
					return &apiError{codeNotFound, err.Error()} // caught up and asked again
				}
				return errInvalidSchema("%v", err)
			}
			return nil
		})
		if err != nil {
			if ae := err.(*apiError); ae.Code == codeNotFound {
				return req, nil, nil, errInvalidSchema("%s", ae.Message)
			}
			return req, nil, nil, err.(*apiError)
		}
	}
	sch, aerr := req.parse(s.cfg.limits(), refs, deps)
	return req, sch, refs, aerr
}

// POST /subjects/{subject}/versions registers a schema and answers {"id": n}.
func (s *Server) registerHandler(w http.ResponseWriter, r *http.Request) {
	subject, aerr := subjectParam(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	req, sch, refs, aerr := s.readSchema(w, r, subject)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	id, aerr := s.register(r.Context(), subject, sch, refs, imported{req.ID, req.Version})
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, struct {
		ID int `json:"id"`
	}{id})
}

// POST /subjects/{subject}?deleted= finds the version of a subject that
// has the given schema.
func (s *Server) lookupSchema(w http.ResponseWriter, r *http.Request) {
	subject, aerr := subjectParam(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	_, sch, _, aerr := s.readSchema(w, r, subject)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	deleted := boolParam(r, "deleted")
	var out subjectSchema
	err := s.view(r.Context(), func(st *state) error {
		sub := st.subjects[subject]
		if sub == nil || !(sub.live() || deleted) {
			return errSubjectNotFound(subject)
		}
		// As a registration would, a schema sent without a contract is
		// looked for with the latest version's too.
		keys := []string{sch.Key}
		if sch.contract == nil {
			keys = append(keys, sch.withContract(st.latestContract(subject)).Key)
		}
		for _, key := range keys {
			for i := len(sub.versions) - 1; i >= 0; i-- {
				v := sub.versions[i]
				if (!v.deleted || deleted) && st.schemaOf(subject, v).schema.Key == key {
					out = st.show(subject, v)
					return nil
				}
			}
		}
		return errSchemaNotFound()
	})
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeJSON(w, out)
}

// DELETE /subjects/{subject}/versions/{version}?permanent= answers with
// the deleted version number.
func (s *Server) deleteVersionHandler(w http.ResponseWriter, r *http.Request) {
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
	num, aerr := s.deleteVersion(r.Context(), subject, ref, boolParam(r, "permanent"))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, num)
}

// DELETE /subjects/{subject}?permanent= answers with the deleted versions.
func (s *Server) deleteSubjectHandler(w http.ResponseWriter, r *http.Request) {
	subject, aerr := subjectParam(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	nums, aerr := s.deleteSubject(r.Context(), subject, boolParam(r, "permanent"))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, nums)
}
