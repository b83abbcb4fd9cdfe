package schema

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/sr"
)

// Registry is what the serde needs from a schema registry client.
// *sr.Client implements it; tests and tools may pass their own.
type Registry interface {
	// SchemaByID returns the schema with a global id (GET /schemas/ids/{id}).
	SchemaByID(ctx context.Context, id int) (sr.Schema, error)
	// RegisterSchema registers s under subject, or returns the id it
	// already has there (POST /subjects/{subject}/versions). The serde
	// always passes id and version -1.
	RegisterSchema(ctx context.Context, subject string, s sr.Schema, id, version int) (int, error)
	// LookupSchema returns the id of s if it is registered under subject
	// (POST /subjects/{subject}).
	LookupSchema(ctx context.Context, subject string, s sr.Schema) (sr.SubjectSchema, error)
}

var _ Registry = (*sr.Client)(nil)

// TopicNameStrategy is Confluent's default subject name for record values:
// "<topic>-value". Every Confluent serializer uses it unless told otherwise,
// so a Java consumer of the same topic finds the same subject.
func TopicNameStrategy(topic string) string { return topic + "-value" }

// isNotFound reports whether err is the registry's answer that a schema id,
// subject or version does not exist, as opposed to a network or server
// failure that is worth retrying.
func isNotFound(err error) bool {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return sr.IsNotFoundError(re.ErrorCode)
	}
	return false
}
