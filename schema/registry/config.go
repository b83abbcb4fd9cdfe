package registry

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Handlers for /config (compatibility levels) and /compatibility (dry-run
// checks); /mode is in mode.go.

type levelResponse struct {
	Level string `json:"compatibilityLevel,omitempty"`
	Group string `json:"compatibilityGroup,omitempty"`
}

// levelRequest is the body of PUT /config. What Confluent's config also
// holds but this registry does not serve (default and override metadata
// and rule sets, aliases, normalization) is refused, not dropped.
type levelRequest struct {
	Level           *string         `json:"compatibility"`
	Group           *string         `json:"compatibilityGroup"`
	DefaultMetadata json.RawMessage `json:"defaultMetadata"`
	OverrideMetaata json.RawMessage `json:"overrideMetadata"`
	DefaultRuleSet  json.RawMessage `json:"defaultRuleSet"`
	OverrideRuleSet json.RawMessage `json:"overrideRuleSet"`
	Alias           json.RawMessage `json:"alias"`
	Normalize       json.RawMessage `json:"normalize"`
}

// unserved names the first field of the request this registry does not serve.
func (req *levelRequest) unserved() string {
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"defaultMetadata", req.DefaultMetadata}, {"overrideMetadata", req.OverrideMetaata}, {"defaultRuleSet", req.DefaultRuleSet},
		{"overrideRuleSet", req.OverrideRuleSet}, {"alias", req.Alias}, {"normalize", req.Normalize}} {
		if !isJSONNull(f.v) {
			return f.name
		}
	}
	return ""
}

// GET /config and GET /config/{subject}?defaultToGlobal=
func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	var out levelResponse
	err := s.view(r.Context(), func(st *state) error {
		if subject == "" || boolParam(r, "defaultToGlobal") {
			out = levelResponse{st.level(subject, s.cfg.DefaultCompatibility), st.group(subject)}
		} else if out = (levelResponse{st.configs[subject], st.groups[subject]}); out == (levelResponse{}) {
			return errSubjectCompatNotSet(subject)
		}
		return nil
	})
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeJSON(w, out)
}

// PUT /config and PUT /config/{subject} with {"compatibility": level}
// echo the request, as Confluent does.
func (s *Server) putConfig(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	if subject != "" {
		if _, aerr := subjectParam(r); aerr != nil {
			writeError(w, aerr)
			return
		}
	}
	var req levelRequest
	if aerr := readJSON(w, r, &req); aerr != nil {
		writeError(w, aerr)
		return
	}
	if f := req.unserved(); f != "" {
		writeError(w, errInvalidCompatibility(fmt.Sprintf("%s (this registry serves compatibility and compatibilityGroup in a config; %s is not served)", f, f)))
		return
	}
	if req.Level == nil && req.Group == nil {
		writeError(w, errInvalidCompatibility(""))
		return
	}
	upd := &configUpdate{group: req.Group}
	var level string
	if req.Level != nil {
		var ok bool
		if level, ok = parseLevel(*req.Level); !ok {
			writeError(w, errInvalidCompatibility(*req.Level))
			return
		}
		upd.level = &level
	}
	if _, aerr := s.setConfig(r.Context(), subject, upd); aerr != nil {
		writeError(w, aerr)
		return
	}
	out := struct {
		Level string `json:"compatibility,omitempty"`
		Group string `json:"compatibilityGroup,omitempty"`
	}{Level: level}
	if req.Group != nil {
		out.Group = *req.Group
	}
	writeJSON(w, out)
}

// DELETE /config resets the global level to the default; DELETE
// /config/{subject} drops the subject's own level (40401 if it has none).
// Both answer with the level that was in force.
func (s *Server) deleteConfig(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	prev, aerr := s.setConfig(r.Context(), subject, nil)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if prev == "" {
		prev = s.cfg.DefaultCompatibility
	}
	writeJSON(w, levelResponse{Level: prev})
}

type compatResponse struct {
	Compatible bool     `json:"is_compatible"`
	Messages   []string `json:"messages,omitempty"`
}

// POST /compatibility/subjects/{subject}/versions/{version}?verbose= checks
// a schema against one version under the subject's level; without a
// version, against every version that registration would check.
func (s *Server) checkCompatibilityHandler(w http.ResponseWriter, r *http.Request) {
	subject, aerr := subjectParam(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var ref *versionRef
	if raw := r.PathValue("version"); raw != "" {
		v, aerr := parseVersion(raw)
		if aerr != nil {
			writeError(w, aerr)
			return
		}
		ref = &v
	}
	verbose := boolParam(r, "verbose")
	_, sch, _, aerr := s.readSchema(w, r, subject)
	if aerr != nil {
		if verbose && aerr.Code == codeInvalidSchema {
			writeJSON(w, compatResponse{Compatible: false, Messages: []string{aerr.Message}})
			return
		}
		writeError(w, aerr)
		return
	}
	var (
		level string
		prev  []previous
	)
	err := s.view(r.Context(), func(st *state) error {
		prev = st.previous(subject)
		if ref != nil {
			sub := st.subjects[subject]
			switch {
			case ref.latest && (sub == nil || !sub.live()):
				prev = nil // nothing to be incompatible with
			case ref.latest:
				prev = prev[len(prev)-1:]
			default:
				var v *version
				if sub != nil {
					v = sub.find(ref.num)
				}
				if v == nil || v.deleted {
					return errVersionNotFound(ref.num)
				}
				prev = []previous{{version: v.num, schema: st.schemaOf(subject, v).schema}}
			}
		}
		level = st.level(subject, s.cfg.DefaultCompatibility)
		if sch.contract == nil {
			sch = sch.withContract(st.latestContract(subject)) // as a registration would
		}
		prev = st.inGroup(subject, sch, prev)
		return nil
	})
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	msgs, aerr := s.checkWithin(r.Context(), level, sch, prev) // outside the lock: it may take CheckTimeout
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if !verbose {
		writeJSON(w, compatResponse{Compatible: len(msgs) == 0})
		return
	}
	writeJSON(w, struct {
		Compatible bool     `json:"is_compatible"`
		Messages   []string `json:"messages"` // [] rather than absent when compatible
	}{len(msgs) == 0, append([]string{}, msgs...)})
}
