// Package jsschema compiles a JSON schema as the registry stores it, with
// the schemas its references name, by github.com/santhosh-tekuri/jsonschema.
// The registry (which checks and stores schemas) and the deserializer
// (which validates records written with them) compile through it, so
// both resolve a "$ref" alike.
//
// References are as Confluent has them: a reference's name is the URI a
// "$ref" uses for the referenced schema ("address.json", or an absolute
// URL, perhaps its "$id"), resolved against the referring schema's "$id"
// or, without one, against a base of our own. The compiler's loader
// serves exactly the referenced versions, so a "$ref" to anything else is
// refused, and nothing is ever fetched.
package jsschema

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// URL names the schema being compiled; it resolves nowhere, and a
// reference's relative name ("address.json") resolves next to it.
const URL = "https://schemas.tributary.invalid/schema.json"

// Ref is a decoded referenced schema with the name it is known by.
type Ref struct {
	Name string
	Doc  any
}

// Compile compiles doc, a decoded schema, with refs. Without "$schema"
// it is draft 7, as Confluent assumes.
func Compile(doc any, refs []Ref) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.UseLoader(refLoader{refs: refs, id: ID(doc)})
	if err := c.AddResource(URL, doc); err != nil {
		return nil, err
	}
	return c.Compile(URL)
}

// ID returns a schema's absolute "$id" (or draft 4's "id"), or "".
func ID(doc any) string {
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

// ResolveURL resolves ref against base, without its fragment; "" when
// either does not parse.
func ResolveURL(base, ref string) string {
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

// URLs returns the URLs a referenced schema answers to, in a schema
// whose "$id" is rootID.
func (r Ref) URLs(rootID string) []string {
	out := []string{ResolveURL(URL, r.Name)}
	if rootID != "" {
		out = append(out, ResolveURL(rootID, r.Name))
	}
	if id := ID(r.Doc); id != "" {
		out = append(out, id)
	}
	return out
}

// Find returns the reference a "$ref" target (without its fragment)
// names, seen from a schema whose base URL is base, in a root whose "$id"
// is rootID.
func Find(refs []Ref, rootID, base, target string) (Ref, bool) {
	want := ResolveURL(base, target)
	for _, r := range refs {
		if r.Name == target {
			return r, true
		}
		for _, c := range r.URLs(rootID) {
			if c != "" && c == want {
				return r, true
			}
		}
	}
	return Ref{}, false
}

// refLoader gives the compiler the referenced schemas, and nothing else.
type refLoader struct {
	refs []Ref
	id   string // the root's "$id", if absolute
}

func (l refLoader) Load(u string) (any, error) {
	want := ResolveURL(u, "")
	for _, r := range l.refs {
		for _, c := range r.URLs(l.id) {
			if c != "" && c == want {
				return r.Doc, nil
			}
		}
	}
	if len(l.refs) == 0 {
		return nil, fmt.Errorf("$ref to %s: a JSON schema here may refer only to itself and to the schemas its references name", u)
	}
	names := make([]string, len(l.refs))
	for i, r := range l.refs {
		names[i] = r.Name
	}
	return nil, fmt.Errorf("$ref to %s: no reference has that name (references: %s); a JSON schema here may refer only to itself and to the schemas its references name", u, strings.Join(names, ", "))
}
