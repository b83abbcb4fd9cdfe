package registry

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Contexts, as Confluent has them: a subject named ":.ctx:name" is the
// subject "name" in the context ".ctx"; a name without that prefix is in
// the default context ("."). Each context has its own schema ids — the
// same id in two contexts may be two schemas, and the same schema may
// have two ids — and its own compatibility level and mode (set on the
// subject ":.ctx:", which names the context itself), falling back to
// those of ":.__GLOBAL:", then to the registry's defaults: the default
// context's level and mode (PUT /config, PUT /mode) do not reach other
// contexts. A reference to an unqualified subject means that subject in
// the referring schema's context.
//
// Clients that cannot name a qualified subject (a serializer, which
// derives its subject from the topic) use a base URL ending in
// /contexts/.ctx: the path is rewritten as Confluent rewrites it, so
// /contexts/.ctx/subjects/s/versions is /subjects/:.ctx:s/versions, and
// /contexts/.ctx/schemas/ids/1 is schema id 1 of .ctx.
//
// Contexts are not records of their own here: a context exists while a
// subject (soft-deleted or not) is in it. Confluent's registry keeps a
// CONTEXT record per context; this one writes it with a context's first
// registration, for a Confluent node reading the topic, and skips it on
// replay.

// globalContext is the subject whose level and mode apply to every
// context that has none of its own.
const globalContext = ":.__GLOBAL:"

// splitContext returns a subject's context (without colons, "" for the
// default) and its name within it. ":.ctx:" is the context itself, with
// an empty name.
func splitContext(subject string) (ctx, name string) {
	if !strings.HasPrefix(subject, ":.") {
		return "", subject
	}
	rest := subject[1:]
	i := strings.IndexByte(rest, ':')
	if i < 0 {
		ctx, name = rest, ""
	} else {
		ctx, name = rest[:i], rest[i+1:]
	}
	if ctx == "." {
		ctx = ""
	}
	return ctx, name
}

// contextOf returns the context of a subject ("" for the default).
func contextOf(subject string) string {
	ctx, _ := splitContext(subject)
	return ctx
}

// contextKey is the subject naming a context itself: ":.ctx:", or "" for
// the default context (whose level and mode are the unqualified ones).
func contextKey(ctx string) string {
	if ctx == "" {
		return ""
	}
	return ":" + ctx + ":"
}

// qualify names subject in ctx, unless it names a context already.
func qualify(ctx, subject string) string {
	if ctx == "" || strings.HasPrefix(subject, ":.") {
		return subject
	}
	return contextKey(ctx) + subject
}

// idSpace is one context's schema ids.
type idSpace struct {
	schemas map[int]*stored
	byKey   map[string]int // schemaDoc.Key → id
	maxID   int
}

func newIDSpace() *idSpace {
	return &idSpace{schemas: make(map[int]*stored), byKey: make(map[string]int)}
}

// space returns the ids of a context, or nil when it has none yet.
func (st *state) space(ctx string) *idSpace {
	if ctx == "" {
		return &st.idSpace
	}
	return st.ctxs[ctx]
}

// spaceFor returns the ids of a subject's context: empty, and not kept,
// while it has none (readers hold only a read lock).
func (st *state) spaceFor(subject string) *idSpace {
	if sp := st.space(contextOf(subject)); sp != nil {
		return sp
	}
	return newIDSpace()
}

// keepSpace returns the ids of a subject's context, creating them.
func (st *state) keepSpace(subject string) *idSpace {
	ctx := contextOf(subject)
	sp := st.space(ctx)
	if sp == nil {
		sp = newIDSpace()
		st.ctxs[ctx] = sp
	}
	return sp
}

// schemaOf returns the schema a version of subject uses.
func (st *state) schemaOf(subject string, v *version) *stored {
	return st.spaceFor(subject).schemas[v.id]
}

// forSpaces calls fn for every context's ids, the default first.
func (st *state) forSpaces(fn func(ctx string, sp *idSpace)) {
	fn("", &st.idSpace)
	for _, ctx := range slices.Sorted(mapKeys(st.ctxs)) {
		fn(ctx, st.ctxs[ctx])
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// highestID is the highest id handed out in any context, or the floor.
func (st *state) highestID() int {
	h := st.idFloor
	st.forSpaces(func(_ string, sp *idSpace) { h = max(h, sp.maxID) })
	return min(h, maxID31)
}

// schemaCount counts the schemas of every context.
func (st *state) schemaCount() int {
	n := 0
	st.forSpaces(func(_ string, sp *idSpace) { n += len(sp.schemas) })
	return n
}

// contexts lists the contexts that have subjects, the default first.
func (st *state) contexts() []string {
	seen := map[string]bool{}
	for name := range st.subjects {
		if ctx := contextOf(name); ctx != "" {
			seen[ctx] = true
		}
	}
	return append([]string{"."}, slices.Sorted(mapKeys(seen))...)
}

// GET /contexts lists the contexts.
func (s *Server) listContexts(w http.ResponseWriter, r *http.Request) {
	var out []string
	s.view(r.Context(), func(st *state) error { out = st.contexts(); return nil })
	writeJSON(w, out)
}

// DELETE /contexts/{context} deletes a context, which is possible only
// once it has no subjects (42211): contexts have no records of their own,
// so there is nothing else to delete.
func (s *Server) deleteContext(w http.ResponseWriter, r *http.Request) {
	ctx, _ := splitContext(":" + strings.Trim(r.PathValue("context"), ":") + ":")
	var busy bool
	err := s.view(r.Context(), func(st *state) error {
		for name := range st.subjects {
			if contextOf(name) == ctx {
				busy = true
				break
			}
		}
		return nil
	})
	switch {
	case err != nil:
		writeError(w, err.(*apiError))
	case busy || ctx == "":
		writeError(w, errContextNotEmpty(r.PathValue("context")))
	default:
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusNoContent)
	}
}

// inContext rewrites a request under /contexts/{ctx}/ as Confluent does:
// the subject after /subjects/, /config/ or /mode/ is qualified with the
// context (/config and /mode alone name the context itself), and so are
// ?subject= of /schemas/ids/... and ?subjectPrefix= of /schemas and
// /subjects. It returns false when the path is not such a request.
func inContext(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/contexts/")
	if !ok {
		return false
	}
	rawCtx, rest, ok := strings.Cut(rest, "/")
	if !ok || rest == "" {
		return false // /contexts/{ctx} itself
	}
	c, err := url.PathUnescape(rawCtx)
	if err != nil {
		return false
	}
	ctx, _ := splitContext(":" + strings.Trim(c, ":") + ":")
	segs := strings.Split(rest, "/")
	q := r.URL.Query()
	switch segs[0] {
	case "subjects", "config", "mode":
		if len(segs) > 1 && segs[1] != "" {
			subject, err := url.PathUnescape(segs[1])
			if err != nil {
				return false
			}
			segs[1] = url.PathEscape(qualify(ctx, subject))
		} else if segs[0] != "subjects" && ctx != "" {
			segs = append(segs[:1], url.PathEscape(contextKey(ctx)))
		}
		if segs[0] == "subjects" && len(segs) == 1 {
			q.Set("subjectPrefix", qualify(ctx, q.Get("subjectPrefix")))
		}
	case "schemas":
		if len(segs) > 1 && segs[1] == "ids" {
			q.Set("subject", qualify(ctx, q.Get("subject")))
		} else if len(segs) == 1 {
			q.Set("subjectPrefix", qualify(ctx, q.Get("subjectPrefix")))
		}
	case "compatibility":
		if len(segs) > 2 && segs[1] == "subjects" {
			subject, err := url.PathUnescape(segs[2])
			if err != nil {
				return false
			}
			segs[2] = url.PathEscape(qualify(ctx, subject))
		}
	}
	path := "/" + strings.Join(segs, "/")
	u := *r.URL
	u.RawPath = path
	u.Path, _ = url.PathUnescape(path)
	u.RawQuery = q.Encode()
	r.URL = &u
	r.RequestURI = u.RequestURI()
	return true
}

// matchPrefix applies a subjectPrefix: as Confluent's, ":*:" matches the
// subjects of every context, and ":*:abc" those whose name in their
// context starts with "abc".
func matchPrefix(subject, prefix string) bool {
	if rest, ok := strings.CutPrefix(prefix, ":*:"); ok {
		_, name := splitContext(subject)
		return strings.HasPrefix(name, rest)
	}
	return strings.HasPrefix(subject, prefix)
}
