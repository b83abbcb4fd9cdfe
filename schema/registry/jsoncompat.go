package registry

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// Compatibility of JSON schemas, after Confluent's rules for the common
// cases: a reader can read what a writer wrote when every document valid
// under the writer is valid under the reader. A property absent from
// "properties" is what the content model says: open (additionalProperties
// absent or true: anything), closed (false: nothing) or partially open (a
// schema). Hence, as in Confluent:
//
//	property added, writer's model open           incompatible (old data may hold it, of any type)
//	property added, writer's model closed         compatible, unless the reader requires it
//	property removed, reader's model closed       incompatible
//	property removed, reader's model open         compatible
//	type changed; integer → number                incompatible; compatible (widened)
//	required property added                       incompatible
//	enum narrowed; enum widened                   incompatible; compatible
//	maxLength/maxItems/maximum lowered, min* raised, pattern changed   incompatible
//	additionalProperties: true → false            incompatible
//
// oneOf and anyOf compare branch by branch (each writer branch must be
// readable by a reader branch); other keywords the reader adds, the check
// does not see. Local "$ref"s ("#/...") are followed.

// jsonCompatible returns nil when reader can read what writer wrote.
func jsonCompatible(reader, writer any) error {
	if canonical(reader) == canonical(writer) {
		return nil
	}
	c := &jsonCheck{rroot: reader, wroot: writer}
	return c.compare("#", reader, writer, 0)
}

type jsonCheck struct {
	rroot, wroot any
	steps        int
}

// maxJSONCompareSteps bounds the pairs of subschemas one check compares.
// Unions compared branch by branch, through "$ref"s back to the root,
// multiply: {"oneOf": [{"$ref": "#"}, {"$ref": "#"}]} would take 4^depth
// steps. A check that runs out is refused, never left running (it could
// not be stopped, and would hold a check slot for good).
const maxJSONCompareSteps = 200_000

// maxJSONCompareDepth bounds the walk, which local "$ref"s could make
// endless; the schema depth limit keeps real schemas far below it.
const maxJSONCompareDepth = 256

func (c *jsonCheck) compare(path string, r, w any, depth int) error {
	if c.steps++; c.steps > maxJSONCompareSteps {
		return fmt.Errorf("%s: the schemas are too intricate to compare (more than %d pairs of subschemas through unions and $refs); simplify them", path, maxJSONCompareSteps)
	}
	if depth > maxJSONCompareDepth {
		if canonical(r) == canonical(w) {
			return nil
		}
		return fmt.Errorf("%s: nested deeper than %d (through $ref), and not the same in both", path, maxJSONCompareDepth)
	}
	r, w = resolveLocal(c.rroot, r), resolveLocal(c.wroot, w)
	if w == false {
		return nil // nothing is written
	}
	if r == false {
		return fmt.Errorf("%s: the reader accepts nothing", path)
	}
	rm, _ := r.(map[string]any)
	wm, _ := w.(map[string]any)
	if len(rm) == 0 {
		return nil // true or {}: anything
	}
	if wm == nil {
		wm = map[string]any{}
	}
	if err := compareTypes(path, rm, wm); err != nil {
		return err
	}
	if err := compareEnum(path, rm, wm); err != nil {
		return err
	}
	if err := compareBounds(path, rm, wm); err != nil {
		return err
	}
	if err := c.compareObject(path, rm, wm, depth); err != nil {
		return err
	}
	if ri, ok := rm["items"]; ok {
		wi, ok := wm["items"]
		if !ok {
			wi = true
		}
		if err := c.compare(path+"/items", ri, wi, depth+1); err != nil {
			return err
		}
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if err := c.compareUnion(path, k, rm, wm, depth); err != nil {
			return err
		}
	}
	if ra, ok := rm["allOf"]; ok && canonical(ra) != canonical(wm["allOf"]) {
		return fmt.Errorf("%s: allOf changed", path)
	}
	return nil
}

// resolveLocal follows "$ref": "#/..." within root, a bounded number of hops.
func resolveLocal(root, v any) any {
	for range 32 {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return v
		}
		target, ok := pointer(root, strings.TrimPrefix(ref, "#"))
		if !ok {
			return v
		}
		v = target
	}
	return v
}

// pointer resolves a JSON pointer ("/definitions/a") in doc.
func pointer(doc any, p string) (any, bool) {
	if p == "" {
		return doc, true
	}
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		if doc, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return doc, true
}

func canonical(v any) string { b, _ := json.Marshal(v); return string(b) }

// types returns the types a schema allows, or nil for any.
func types(m map[string]any) []string {
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func compareTypes(path string, r, w map[string]any) error {
	rt, wt := types(r), types(w)
	if rt == nil {
		return nil
	}
	if wt == nil {
		return fmt.Errorf("%s: type narrowed from any to %v", path, rt)
	}
	for _, t := range wt {
		if !slices.Contains(rt, t) && !(t == "integer" && slices.Contains(rt, "number")) {
			return fmt.Errorf("%s: type changed from %v to %v", path, wt, rt)
		}
	}
	return nil
}

func compareEnum(path string, r, w map[string]any) error {
	re, ok := r["enum"].([]any)
	if !ok {
		return nil
	}
	we, ok := w["enum"].([]any)
	if !ok {
		return fmt.Errorf("%s: enum added", path)
	}
	have := make(map[string]bool, len(re))
	for _, v := range re {
		have[canonical(v)] = true
	}
	for _, v := range we {
		if !have[canonical(v)] {
			return fmt.Errorf("%s: enum narrowed: %s is no longer allowed", path, canonical(v))
		}
	}
	return nil
}

// compareBounds: the reader's upper bounds may not be below the writer's,
// nor its lower bounds above, nor its pattern another.
func compareBounds(path string, r, w map[string]any) error {
	for _, k := range []string{"maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum"} {
		if rv, ok := number(r[k]); ok {
			if wv, ok := number(w[k]); !ok || wv.Cmp(rv) > 0 {
				return fmt.Errorf("%s: %s lowered to %s", path, k, rv)
			}
		}
	}
	for _, k := range []string{"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum"} {
		if rv, ok := number(r[k]); ok {
			if wv, ok := number(w[k]); !ok || wv.Cmp(rv) < 0 {
				return fmt.Errorf("%s: %s raised to %s", path, k, rv)
			}
		}
	}
	if rp, ok := r["pattern"]; ok && canonical(rp) != canonical(w["pattern"]) {
		return fmt.Errorf("%s: pattern changed", path)
	}
	return nil
}

func number(v any) (*big.Float, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	f, _, err := big.ParseFloat(string(n), 10, 128, big.ToNearestEven)
	return f, err == nil
}

// contentModel is what a schema says of properties it does not list:
// true (open), false (closed) or a schema.
func contentModel(m map[string]any) any {
	if a, ok := m["additionalProperties"]; ok {
		return a
	}
	return true
}

func (c *jsonCheck) compareObject(path string, r, w map[string]any, depth int) error {
	rp, _ := r["properties"].(map[string]any)
	wp, _ := w["properties"].(map[string]any)
	radd, wadd := contentModel(r), contentModel(w)
	for _, name := range sortedKeys(wp) {
		p := path + "/properties/" + name
		if rs, ok := rp[name]; ok {
			if err := c.compare(p, rs, wp[name], depth+1); err != nil {
				return err
			}
			continue
		}
		if radd == false {
			return fmt.Errorf("%s: property removed from a closed content model", p)
		}
		if err := c.compare(p, radd, wp[name], depth+1); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(rp) {
		if _, ok := wp[name]; ok {
			continue
		}
		p := path + "/properties/" + name
		if wadd == true {
			if rs, _ := rp[name].(map[string]any); rp[name] != true && len(rs) > 0 {
				return fmt.Errorf("%s: property added to an open content model (old data may hold it with any value; close the old model with additionalProperties: false first)", p)
			}
			continue
		}
		if wadd != false {
			if err := c.compare(p, rp[name], wadd, depth+1); err != nil {
				return err
			}
		}
	}
	if radd == false && wadd != false {
		return fmt.Errorf("%s: additionalProperties became false: properties the old schema allowed are refused", path)
	}
	if ra, ok := radd.(map[string]any); ok && wadd != false {
		if err := c.compare(path+"/additionalProperties", ra, wadd, depth+1); err != nil {
			return err
		}
	}
	wreq := map[string]bool{}
	if wr, ok := w["required"].([]any); ok {
		for _, n := range wr {
			if s, ok := n.(string); ok {
				wreq[s] = true
			}
		}
	}
	if rr, ok := r["required"].([]any); ok {
		for _, n := range rr {
			if s, ok := n.(string); ok && !wreq[s] {
				return fmt.Errorf("%s: required property %q added", path, s)
			}
		}
	}
	return nil
}

// compareUnion: every writer branch must be readable by a reader branch.
func (c *jsonCheck) compareUnion(path, k string, r, w map[string]any, depth int) error {
	rb, ok := r[k].([]any)
	if !ok {
		return nil
	}
	wb, ok := w[k].([]any)
	if !ok {
		wb = []any{w}
	}
	for i, wv := range wb {
		readable := false
		for _, rv := range rb {
			err := c.compare(path, rv, wv, depth+1)
			if c.steps > maxJSONCompareSteps {
				return err // out of steps: say so, not that the branch failed
			}
			if err == nil {
				readable = true
				break
			}
		}
		if !readable {
			return fmt.Errorf("%s/%s: branch %d of the old schema matches no branch of the new one", path, k, i)
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
