package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// contentType is what every response carries, as Confluent's does.
const contentType = "application/vnd.schemaregistry.v1+json"

// maxBodyBytes bounds a request body; a schema larger than this is
// refused with 42209 rather than read into memory.
const maxBodyBytes = 8 << 20

// routes maps the Confluent Schema Registry REST API onto handlers. Paths
// match on escaped segments, so a subject containing "/" works when the
// client escapes it, as pkg/sr and the Java client do.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, struct{}{}) })
	mux.HandleFunc("GET /healthz", s.health)

	mux.HandleFunc("GET /subjects", s.listSubjects)
	mux.HandleFunc("POST /subjects/{subject}", s.lookupSchema)
	mux.HandleFunc("DELETE /subjects/{subject}", s.deleteSubjectHandler)
	mux.HandleFunc("GET /subjects/{subject}/versions", s.listVersions)
	mux.HandleFunc("POST /subjects/{subject}/versions", s.registerHandler)
	mux.HandleFunc("GET /subjects/{subject}/versions/{version}", s.getVersion)
	mux.HandleFunc("GET /subjects/{subject}/versions/{version}/schema", s.getVersionSchema)
	mux.HandleFunc("GET /subjects/{subject}/versions/{version}/referencedby", s.referencedBy)
	mux.HandleFunc("DELETE /subjects/{subject}/versions/{version}", s.deleteVersionHandler)

	mux.HandleFunc("GET /schemas", s.listSchemas)
	mux.HandleFunc("GET /schemas/types", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, []string{typeJSON, typeProtobuf, typeAvro}) })
	mux.HandleFunc("GET /schemas/ids/{id}", s.schemaByID)
	mux.HandleFunc("GET /schemas/ids/{id}/schema", s.schemaTextByID)
	mux.HandleFunc("GET /schemas/ids/{id}/subjects", s.subjectsByID)
	mux.HandleFunc("GET /schemas/ids/{id}/versions", s.versionsByID)
	mux.HandleFunc("GET /schemas/ids/{id}/referencedby", s.referencedByID)

	mux.HandleFunc("GET /config", s.getConfig)
	mux.HandleFunc("PUT /config", s.putConfig)
	mux.HandleFunc("DELETE /config", s.deleteConfig)
	mux.HandleFunc("GET /config/{subject}", s.getConfig)
	mux.HandleFunc("PUT /config/{subject}", s.putConfig)
	mux.HandleFunc("DELETE /config/{subject}", s.deleteConfig)

	mux.HandleFunc("POST /compatibility/subjects/{subject}/versions/{version}", s.checkCompatibilityHandler)
	mux.HandleFunc("POST /compatibility/subjects/{subject}/versions", s.checkCompatibilityHandler)

	mux.HandleFunc("GET /contexts", s.listContexts)
	mux.HandleFunc("DELETE /contexts/{context}", s.deleteContext)

	mux.HandleFunc("GET /mode", s.getMode)
	mux.HandleFunc("PUT /mode", s.putMode)
	mux.HandleFunc("GET /mode/{subject}", s.getMode)
	mux.HandleFunc("PUT /mode/{subject}", s.putMode)
	mux.HandleFunc("DELETE /mode", s.resetMode)
	mux.HandleFunc("DELETE /mode/{subject}", s.resetMode)

	return confluentShape(mux)
}

// confluentShape gives the mux's own 404 and 405 answers Confluent's JSON
// body and checks request content types, so a client that parses every
// error body never meets plain text.
func confluentShape(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.ContentLength != 0 && !acceptedContentType(r.Header.Get("Content-Type")) {
			writeError(w, &apiError{codeUnsupportedMediaType, "HTTP 415 Unsupported Media Type: send application/vnd.schemaregistry.v1+json"})
			return
		}
		inContext(r) // /contexts/{ctx}/... is the same API within a context (context.go)
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r) // not h: only ServeHTTP sets the path values
			return
		}
		// No route: let the mux decide between 404 and 405 (and set
		// Allow), then answer in JSON.
		rec := &statusRecorder{header: w.Header()}
		h.ServeHTTP(rec, r)
		switch rec.code {
		case http.StatusMethodNotAllowed:
			writeError(w, &apiError{codeMethodNotAllowed, "HTTP 405 Method Not Allowed"})
		case http.StatusNotFound:
			writeError(w, &apiError{codeNotFound, "HTTP 404 Not Found"})
		default: // a redirect to the cleaned path; Location is already set
			w.WriteHeader(rec.code)
		}
	})
}

// statusRecorder keeps the status and headers a handler sets and drops
// its body.
type statusRecorder struct {
	header http.Header
	code   int
}

func (s *statusRecorder) Header() http.Header         { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusRecorder) WriteHeader(code int)        { s.code = code }

func acceptedContentType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case "application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
		"application/json", "application/octet-stream":
		return true
	}
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	writeJSONStatus(w, http.StatusOK, v)
}

func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // schemas are returned as written, without \u003c escapes
	if err := enc.Encode(v); err != nil {
		status, buf = http.StatusInternalServerError, *bytes.NewBufferString(`{"error_code":50001,"message":"encode response"}`)
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	w.Write(bytes.TrimRight(buf.Bytes(), "\n"))
}

func writeError(w http.ResponseWriter, err *apiError) {
	writeJSONStatus(w, err.status(), err)
}

// readJSON decodes a request body into v.
func readJSON(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errSchemaTooLarge(maxBodyBytes)
		}
		return errBadRequest("read request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errBadRequest("Request body is empty: send a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errBadRequest("Request body is not valid JSON for this endpoint: %v", err)
	}
	return nil
}

// boolParam reads a query flag the way JAX-RS does: "true" in any case.
func boolParam(r *http.Request, name string) bool {
	return strings.EqualFold(r.URL.Query().Get(name), "true")
}

// versionRef is a version path segment: a number, or the latest version.
type versionRef struct {
	num    int
	latest bool
}

// parseVersion accepts what Confluent accepts: 1..2^31-1, "latest" and -1.
func parseVersion(s string) (versionRef, *apiError) {
	if s == "latest" {
		return versionRef{latest: true}, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	switch {
	case err != nil:
		return versionRef{}, errInvalidVersion(s)
	case n == -1:
		return versionRef{latest: true}, nil
	case n < 1:
		return versionRef{}, errInvalidVersion(s)
	}
	return versionRef{num: int(n)}, nil
}

// subjectParam returns the subject of a request, or 42208 for a name no
// client could mean.
func subjectParam(r *http.Request) (string, *apiError) {
	s := r.PathValue("subject")
	if !validSubject(s) {
		return "", errInvalidSubject(s)
	}
	return s, nil
}

// GET /healthz answers 200 while the node reads its log, and 503 with the
// reason while reading fails (a Node that has no Server yet answers 503 to
// every path, this one included).
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	err := s.readErr
	s.mu.RUnlock()
	if err != nil {
		writeError(w, errUnavailable(fmt.Errorf("reading the %s topic fails: %w", s.cfg.Topic, err)))
		return
	}
	// Writes refused (checkpoint.go) leave the node healthy — it serves
	// reads — but say so, with what to do.
	var refused string
	if msg := s.refused.Load(); msg != nil {
		refused = *msg
	}
	writeJSON(w, struct {
		Status        string `json:"status"`
		WritesRefused string `json:"writes_refused,omitempty"`
	}{"ok", refused})
}
