package mirror

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"
)

// A schema with references (an Avro type, a JSON "$ref" or a Protobuf
// import from another subject) names subject versions of the source
// registry, which are other versions, or none, in the target. Each
// referenced version is therefore carried first, by the same rule as the
// schema itself: read from the source, registered under the same subject
// in the target (its own references carried before it), and the reference
// rewritten to the version it has there.

// versionReader reads a subject's version; *sr.Client is one.
type versionReader interface {
	SchemaByVersion(ctx context.Context, subject string, version int) (sr.SubjectSchema, error)
}

// maxRefDepth bounds how deep references are followed; a registry bounds
// them itself, this only keeps a cycle in a foreign registry from looping.
const maxRefDepth = 32

// carryRefs registers the versions refs name in the target registry and
// returns refs naming the target's versions.
func (m *schemaMap) carryRefs(ctx context.Context, key schemaKey, refs []sr.SchemaReference, depth int) ([]sr.SchemaReference, error) {
	if len(refs) == 0 {
		return refs, nil
	}
	if depth >= maxRefDepth {
		return nil, &unresolvedError{key.subject, key.id, fmt.Errorf("schema references nest more than %d deep", maxRefDepth)}
	}
	src, ok := m.src.(versionReader)
	if !ok {
		return nil, &unresolvedError{key.subject, key.id, fmt.Errorf("the schema has references, and the source registry client cannot read subject versions")}
	}
	out := make([]sr.SchemaReference, len(refs))
	for i, ref := range refs {
		ss, err := src.SchemaByVersion(ctx, ref.Subject, ref.Version)
		if err != nil {
			if clientError(err) {
				return nil, &unresolvedError{key.subject, key.id, fmt.Errorf("source registry: reference %q (subject %s version %d): %w", ref.Name, ref.Subject, ref.Version, err)}
			}
			return nil, fmt.Errorf("source registry: reading subject %s version %d: %w", ref.Subject, ref.Version, err)
		}
		dep := ss.Schema
		if dep.References, err = m.carryRefs(ctx, key, dep.References, depth+1); err != nil {
			return nil, err
		}
		if _, err := m.dst.RegisterSchema(ctx, ref.Subject, dep, -1, -1); err != nil {
			if clientError(err) {
				return nil, &unresolvedError{key.subject, key.id, fmt.Errorf("target registry refused reference %q (subject %s): %w", ref.Name, ref.Subject, err)}
			}
			return nil, fmt.Errorf("target registry: registering subject %s: %w", ref.Subject, err)
		}
		got, err := m.dst.LookupSchema(ctx, ref.Subject, dep)
		if err != nil {
			return nil, fmt.Errorf("target registry: looking up subject %s: %w", ref.Subject, err)
		}
		out[i] = sr.SchemaReference{Name: ref.Name, Subject: ref.Subject, Version: got.Version}
	}
	return out, nil
}
