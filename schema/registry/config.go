package registry

import (
	"net/http"
)

// Handlers for /config (compatibility levels) and /compatibility (dry-run
// checks); /mode is in mode.go.

type levelResponse struct {
	Level string `json:"compatibilityLevel"`
}

type levelRequest struct {
	Level *string `json:"compatibility"`
}

// GET /config and GET /config/{subject}?defaultToGlobal=
func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	var level string
	err := s.view(r.Context(), func(st *state) error {
		if subject == "" || boolParam(r, "defaultToGlobal") {
			level = st.level(subject, s.cfg.DefaultCompatibility)
		} else if level = st.configs[subject]; level == "" {
			return errSubjectCompatNotSet(subject)
		}
		return nil
	})
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeJSON(w, levelResponse{level})
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
	if req.Level == nil {
		writeError(w, errInvalidCompatibility(""))
		return
	}
	level, ok := parseLevel(*req.Level)
	if !ok {
		writeError(w, errInvalidCompatibility(*req.Level))
		return
	}
	if _, aerr := s.setLevel(r.Context(), subject, level); aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, struct {
		Level string `json:"compatibility"`
	}{level})
}

// DELETE /config resets the global level to the default; DELETE
// /config/{subject} drops the subject's own level (40401 if it has none).
// Both answer with the level that was in force.
func (s *Server) deleteConfig(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	prev, aerr := s.setLevel(r.Context(), subject, "")
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if prev == "" {
		prev = s.cfg.DefaultCompatibility
	}
	writeJSON(w, levelResponse{prev})
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
	_, sch, _, aerr := s.readSchema(w, r)
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
				prev = []previous{{version: v.num, schema: st.schemas[v.id].schema}}
			}
		}
		level = st.level(subject, s.cfg.DefaultCompatibility)
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
