package registry

import (
	"fmt"
	"net/url"
	"strings"
)

// JSON Schema references, as Confluent has them: a reference's name is
// the URI a "$ref" uses for the referenced schema ("address.json", or an
// absolute URL, perhaps its "$id"), resolved against the referring
// schema's "$id" or, without one, against a base of our own. The
// compiler's loader serves exactly the referenced versions, so a "$ref"
// to anything else is still refused, and nothing is ever fetched.
//
// For the compatibility check (jsoncompat.go), which follows only local
// "$ref"s, the referenced schemas are put under one key of the root,
// jsonRefsKey, and every "$ref" into them rewritten as a local one: the
// check then walks into a referenced schema as into a definition.

// jsonRef is a decoded referenced schema with the name it is known by.
type jsonRef struct {
	name string
	doc  any
}

// jsonRefsKey holds the referenced schemas in the document the
// compatibility check walks; no real schema uses it.
const jsonRefsKey = "$tributaryRefs"

func decodeJSONDeps(deps []refDep, lim schemaLimits) ([]jsonRef, error) {
	out := make([]jsonRef, 0, len(deps))
	for _, d := range deps {
		doc, err := decodeJSONSchema(d.text, lim)
		if err != nil {
			return nil, fmt.Errorf("reference %q: %v", d.name, err)
		}
		out = append(out, jsonRef{name: d.name, doc: doc})
	}
	return out, nil
}

// jsonID returns a schema's absolute "$id" (or draft 4's "id"), or "".
func jsonID(doc any) string {
	m, ok := doc.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range []string{"$id", "id"} {
		if s, ok := m[k].(string); ok {
			if u, err := url.Parse(s); err == nil && u.IsAbs() {
				u.Fragment = ""
				return u.String()
			}
		}
	}
	return ""
}

// resolveURL resolves ref against base, without its fragment; "" when
// either does not parse.
func resolveURL(base, ref string) string {
	b, err := url.Parse(base)
	if err != nil {
		return ""
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	u := b.ResolveReference(r)
	u.Fragment = ""
	return u.String()
}

// urls returns the URLs a referenced schema answers to.
func (r jsonRef) urls(rootID string) []string {
	out := []string{resolveURL(jsonSchemaURL, r.name)}
	if rootID != "" {
		out = append(out, resolveURL(rootID, r.name))
	}
	if id := jsonID(r.doc); id != "" {
		out = append(out, id)
	}
	return out
}

// refLoader gives the compiler the referenced schemas, and nothing else.
type refLoader struct {
	refs []jsonRef
	id   string // the root's "$id", if absolute
}

func (l refLoader) Load(u string) (any, error) {
	want := resolveURL(u, "")
	for _, r := range l.refs {
		for _, c := range r.urls(l.id) {
			if c != "" && c == want {
				return r.doc, nil
			}
		}
	}
	if len(l.refs) == 0 {
		return nil, fmt.Errorf("$ref to %s: a JSON schema here may refer only to itself and to the schemas its references name", u)
	}
	names := make([]string, len(l.refs))
	for i, r := range l.refs {
		names[i] = r.name
	}
	return nil, fmt.Errorf("$ref to %s: no reference has that name (references: %s); a JSON schema here may refer only to itself and to the schemas its references name", u, strings.Join(names, ", "))
}

// withRefs returns the document the compatibility check walks: doc itself
// without references, else a copy holding the referenced schemas under
// jsonRefsKey with every "$ref" into them made local.
func withRefs(doc any, refs []jsonRef) any {
	root, ok := doc.(map[string]any)
	if !ok || len(refs) == 0 {
		return doc
	}
	id := jsonID(doc)
	find := func(base, ref string) (string, bool) {
		want := resolveURL(base, ref)
		for _, r := range refs {
			if r.name == ref {
				return r.name, true
			}
			for _, c := range r.urls(id) {
				if c != "" && c == want {
					return r.name, true
				}
			}
		}
		return "", false
	}
	var rewrite func(v any, in string) any
	rewrite = func(v any, in string) any {
		switch n := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(n))
			for k, c := range n {
				out[k] = rewrite(c, in)
			}
			if ref, ok := n["$ref"].(string); ok {
				target, frag, _ := strings.Cut(ref, "#")
				switch {
				case target == "" && in != "":
					out["$ref"] = "#/" + jsonRefsKey + "/" + pointerEscape(in) + frag
				case target != "":
					base := jsonSchemaURL
					if in != "" {
						base = resolveURL(jsonSchemaURL, in)
					}
					if name, ok := find(base, target); ok {
						out["$ref"] = "#/" + jsonRefsKey + "/" + pointerEscape(name) + frag
					}
				}
			}
			return out
		case []any:
			out := make([]any, len(n))
			for i, c := range n {
				out[i] = rewrite(c, in)
			}
			return out
		}
		return v
	}
	out := rewrite(root, "").(map[string]any)
	deps := make(map[string]any, len(refs))
	for _, r := range refs {
		deps[r.name] = rewrite(r.doc, r.name)
	}
	out[jsonRefsKey] = deps
	return out
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
