package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Modes, as Confluent names them. A subject's mode is its own if it has
// one, else the global one, else READWRITE; a global READONLY_OVERRIDE
// beats every subject's own mode.
//
//	READWRITE          registrations get the next id and version
//	READONLY           registrations and deletes are refused (42205)
//	READONLY_OVERRIDE  READONLY, whatever mode a subject has of its own
//	IMPORT             a registration must carry the id (and may carry the
//	                   version) it had in the registry it is copied from; no
//	                   compatibility check. Later ids are handed out above
//	                   every imported one, so they never collide.
//
// Modes are MODE records on the log, as Confluent writes them, so every
// node applies them at the same point: a registration decided before a
// READONLY took effect, but appended after it, is skipped on every node
// and its writer told.
const (
	modeReadWrite        = "READWRITE"
	modeReadOnly         = "READONLY"
	modeReadOnlyOverride = "READONLY_OVERRIDE"
	modeImport           = "IMPORT"
)

const validModesText = "READWRITE, READONLY, READONLY_OVERRIDE, IMPORT"

// parseMode returns the canonical name of a mode, in any letter case.
func parseMode(s string) (string, bool) {
	switch m := strings.ToUpper(strings.TrimSpace(s)); m {
	case modeReadWrite, modeReadOnly, modeReadOnlyOverride, modeImport:
		return m, true
	}
	return "", false
}

func readOnly(mode string) bool { return mode == modeReadOnly || mode == modeReadOnlyOverride }

// mode returns the mode in force for a subject ("" for the global one).
//
// As with levels (state.level), a subject's own mode comes first, then its
// context's (for the default context, the global mode), then that of
// ":.__GLOBAL:"; a READONLY_OVERRIDE of the context or of ":.__GLOBAL:"
// beats the subject's own.
func (st *state) mode(name string) string {
	sc := scopes(name)
	for _, n := range sc[max(len(sc)-2, 0):] {
		if st.modes[n] == modeReadOnlyOverride {
			return modeReadOnlyOverride
		}
	}
	for _, n := range sc {
		if m, ok := st.modes[n]; ok {
			return m
		}
	}
	return modeReadWrite
}

// applyMode applies a MODE record: value nil resets.
func (st *state) applyMode(name string, value []byte) string {
	if value == nil {
		delete(st.modes, name)
		return ""
	}
	var v modeValue
	if err := json.Unmarshal(value, &v); err != nil {
		return fmt.Sprintf("mode value is not JSON of the expected shape: %v", err)
	}
	m, ok := parseMode(v.Mode)
	if !ok {
		return fmt.Sprintf("unknown mode %q", v.Mode)
	}
	st.modes[name] = m
	return ""
}

// hasSchemas reports whether a subject ("" for any) has live versions:
// IMPORT is for an empty registry or subject, so an imported id or
// version cannot clash with one handed out here.
func (st *state) hasSchemas(name string) bool {
	ctx, sub := splitContext(name)
	if sub != "" {
		s := st.subjects[name]
		return s != nil && s.live()
	}
	for n, s := range st.subjects {
		if s.live() && (name == "" || contextOf(n) == ctx) {
			return true
		}
	}
	return false
}

// writable refuses a registration or delete under subject in a read-only mode.
func (st *state) writable(subject string) *apiError {
	if m := st.mode(subject); readOnly(m) {
		return errNotPermitted(fmt.Sprintf("Subject %s is in read-only mode", subject))
	}
	return nil
}

// setMode sets (mode != "") or resets a subject's mode, or the global one
// when subject is "", and returns the mode it had of its own before, or "".
func (s *Server) setMode(ctx context.Context, subject, mode string, force bool) (string, *apiError) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.sync(ctx, "Update mode"); err != nil {
		return "", err
	}
	s.mu.RLock()
	prev := s.st.modes[subject]
	busy := mode == modeImport && !force && s.st.hasSchemas(subject)
	s.mu.RUnlock()
	if busy {
		return "", errNotPermitted("Cannot import since found existing subjects; set force=true to import into a registry that has schemas (their ids and versions may then clash with imported ones)")
	}
	if mode == "" && subject != "" && prev == "" {
		return "", errSubjectNotFound(subject) // Confluent's answer to resetting a mode never set
	}
	if err := s.append(ctx, "Update mode", modeRecord(subject, mode)); err != nil {
		return "", err
	}
	s.cfg.Logger.Info("mode changed", "subject", subject, "from", prev, "to", mode)
	return prev, nil
}

type modeResponse struct {
	Mode string `json:"mode"`
}

// GET /mode and GET /mode/{subject}?defaultToGlobal=
func (s *Server) getMode(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	var mode string
	err := s.view(r.Context(), func(st *state) error {
		if subject == "" || boolParam(r, "defaultToGlobal") {
			mode = st.mode(subject)
		} else if mode = st.modes[subject]; mode == "" {
			return errSubjectModeNotSet(subject)
		}
		return nil
	})
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	writeJSON(w, modeResponse{mode})
}

// PUT /mode and PUT /mode/{subject}?force= with {"mode": mode} echo the
// mode. IMPORT needs the registry (or subject) empty unless force=true.
func (s *Server) putMode(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	if subject != "" {
		if _, aerr := subjectParam(r); aerr != nil {
			writeError(w, aerr)
			return
		}
	}
	var req struct {
		Mode string `json:"mode"`
	}
	if aerr := readJSON(w, r, &req); aerr != nil {
		writeError(w, aerr)
		return
	}
	mode, ok := parseMode(req.Mode)
	if !ok {
		writeError(w, errInvalidMode(req.Mode))
		return
	}
	if _, aerr := s.setMode(r.Context(), subject, mode, boolParam(r, "force")); aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, modeResponse{mode})
}

// DELETE /mode resets the global mode to READWRITE; DELETE /mode/{subject}
// drops the subject's own mode (40401 if it has none). Both answer with
// the mode that was set.
func (s *Server) resetMode(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	prev, aerr := s.setMode(r.Context(), subject, "", false)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if prev == "" {
		prev = modeReadWrite
	}
	writeJSON(w, modeResponse{prev})
}

// planImport plans a registration in IMPORT mode: the id is the one the
// request carries, the version too if it carries one (else the next). A
// copy run again finds what it copied and gets the same answer; anything
// that would change an id's schema or a version's is refused.
func (st *state) planImport(subject string, sch *schemaDoc, imp imported) (regPlan, *apiError) {
	if imp.id <= 0 {
		return regPlan{}, errNotPermitted(fmt.Sprintf("Subject %s is in import mode: a registration must carry the schema's id (and may carry its version) from the registry it is copied from", subject))
	}
	if !validNumber(imp.id) {
		return regPlan{}, errNotPermitted(fmt.Sprintf("schema id %d is outside 1..2^31-1", imp.id))
	}
	if imp.version > maxID31 {
		return regPlan{}, errInvalidVersion(fmt.Sprint(imp.version))
	}
	sp := st.spaceFor(subject)
	if have, ok := sp.schemas[imp.id]; ok && have.schema.Key != sch.Key {
		return regPlan{}, errNotPermitted(fmt.Sprintf("Overwrite new schema with id %d is not permitted: the id already names another schema", imp.id))
	}
	if id, ok := sp.byKey[sch.Key]; ok && id != imp.id {
		return regPlan{}, errNotPermitted(fmt.Sprintf("the schema is already stored with id %d; one schema has one id here, so it cannot also be imported as id %d", id, imp.id))
	}
	sub := st.subjects[subject]
	num := imp.version
	if num <= 0 {
		num = 1
		if sub != nil {
			num = sub.latest(true) + 1
		}
	}
	if sub != nil {
		if v := sub.find(num); v != nil {
			if v.id == imp.id && !v.deleted {
				return regPlan{id: v.id}, nil // copied before
			}
			return regPlan{}, errNotPermitted(fmt.Sprintf("Subject %s already has version %d (schema id %d, deleted: %v); it cannot be imported again as schema id %d", subject, num, v.id, v.deleted, imp.id))
		}
	}
	return regPlan{id: imp.id, num: num, imported: true}, nil
}
