package registry

import (
	"fmt"
	"strings"

	"github.com/tributary-io/tributary/schema/internal/jsschema"
)

// JSON Schema references (schema/internal/jsschema says how a "$ref"
// names one).
//
// For the compatibility check (jsoncompat.go), which follows only local
// "$ref"s, the referenced schemas are put under one key of the root,
// jsonRefsKey, and every "$ref" into them rewritten as a local one: the
// check then walks into a referenced schema as into a definition.

// jsonRefsKey holds the referenced schemas in the document the
// compatibility check walks; no real schema uses it.
const jsonRefsKey = "$tributaryRefs"

func decodeJSONDeps(deps []refDep, lim schemaLimits) ([]jsschema.Ref, error) {
	out := make([]jsschema.Ref, 0, len(deps))
	for _, d := range deps {
		doc, err := decodeJSONSchema(d.text, lim)
		if err != nil {
			return nil, fmt.Errorf("reference %q: %v", d.name, err)
		}
		out = append(out, jsschema.Ref{Name: d.name, Doc: doc})
	}
	return out, nil
}

// withRefs returns the document the compatibility check walks: doc itself
// without references, else a copy holding the referenced schemas under
// jsonRefsKey with every "$ref" into them made local.
func withRefs(doc any, refs []jsschema.Ref) any {
	root, ok := doc.(map[string]any)
	if !ok || len(refs) == 0 {
		return doc
	}
	id := jsschema.ID(doc)
	find := func(base, ref string) (string, bool) {
		r, ok := jsschema.Find(refs, id, base, ref)
		return r.Name, ok
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
					base := jsschema.URL
					if in != "" {
						base = jsschema.ResolveURL(jsschema.URL, in)
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
		deps[r.Name] = rewrite(r.Doc, r.Name)
	}
	out[jsonRefsKey] = deps
	return out
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
