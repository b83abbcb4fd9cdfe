package schema

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/schema/internal/avsc"
)

// A writer schema with references (Avro named types defined in other
// subjects' versions) is resolved by reading those versions, transitively,
// and is then used in a self-contained form: the JSON of the whole parsed
// schema, which defines each referenced type where it is first used. That
// form is what WriterSchema returns, so a file written with it (the
// loader's) can be read without the registry.

// VersionReader reads a subject's version. *sr.Client is one; a Registry
// that is not cannot resolve references.
type VersionReader interface {
	SchemaByVersion(ctx context.Context, subject string, version int) (sr.SubjectSchema, error)
}

// maxReferences bounds the versions a writer schema may reach, as the
// registry bounds them.
const maxReferences = 256

// referenced is a schema a writer schema's references reach, with the
// name the reference gives it.
type referenced struct {
	name, text string
}

// references returns the versions the references of schema id reach,
// transitively, each after those it references itself. They must be of
// the schema's own type.
func references(ctx context.Context, reg Registry, id int, s sr.Schema) ([]referenced, error) {
	vr, ok := reg.(VersionReader)
	if !ok {
		return nil, fmt.Errorf("%w: schema id %d uses schema references, and the registry client cannot read the versions they name", ErrUnsupportedSchema, id)
	}
	var deps []referenced
	seen := map[string]bool{}
	var walk func(refs []sr.SchemaReference, depth int) error
	walk = func(refs []sr.SchemaReference, depth int) error {
		if depth > 32 {
			return fmt.Errorf("%w: schema id %d: references nest more than 32 deep", ErrUnsupportedSchema, id)
		}
		for _, ref := range refs {
			at := fmt.Sprintf("%s\x00%d", ref.Subject, ref.Version)
			if seen[at] {
				continue
			}
			if seen[at] = true; len(seen) > maxReferences {
				return fmt.Errorf("%w: schema id %d reaches more than %d referenced versions", ErrUnsupportedSchema, id, maxReferences)
			}
			ss, err := vr.SchemaByVersion(ctx, ref.Subject, ref.Version)
			if err != nil {
				if isNotFound(err) {
					return fmt.Errorf("%w: schema id %d: reference %q (subject %s version %d): %v", ErrUnknownID, id, ref.Name, ref.Subject, ref.Version, err)
				}
				return fmt.Errorf("schema: fetch reference %q of schema id %d: %w", ref.Name, id, err)
			}
			if ss.Type != s.Type {
				return fmt.Errorf("%w: schema id %d: reference %q is a %s schema", ErrUnsupportedSchema, id, ref.Name, ss.Type)
			}
			if err := walk(ss.References, depth+1); err != nil {
				return err
			}
			deps = append(deps, referenced{name: ref.Name, text: ss.Schema.Schema})
		}
		return nil
	}
	if err := walk(s.References, 1); err != nil {
		return nil, err
	}
	return deps, nil
}

// resolveReferences returns the writer schema id, which has refs, in its
// self-contained form.
func resolveReferences(ctx context.Context, reg Registry, id int, s sr.Schema) (*avsc.Schema, error) {
	refs, err := references(ctx, reg, id, s)
	if err != nil {
		return nil, err
	}
	deps := make([]string, len(refs))
	for i, r := range refs {
		deps[i] = r.text
	}
	p, err := avsc.ParseReferencing(s.Schema, deps)
	if err != nil {
		return nil, fmt.Errorf("schema: writer schema id %d with its references: %w", id, err)
	}
	full, err := json.Marshal(p.Avro)
	if err != nil {
		return nil, fmt.Errorf("schema: writer schema id %d: %w", id, err)
	}
	whole, err := avsc.Parse(string(full))
	if err != nil {
		return nil, fmt.Errorf("schema: writer schema id %d, made self-contained, does not parse: %w", id, err)
	}
	return whole, nil
}
