package registry

import (
	"fmt"
	"net/http"
	"time"
)

// apiError is an error in Confluent's shape: an HTTP status and a body
// {"error_code": ..., "message": ...}. Five-digit codes carry their status
// in the first three digits (40401 → 404); three-digit codes are the
// status itself. Messages follow Confluent's wording where clients or
// people may match on it.
type apiError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

func (e *apiError) status() int {
	if e.Code >= 10000 {
		return e.Code / 100
	}
	return e.Code
}

// Confluent's error codes (io.confluent.kafka.schemaregistry.rest.exceptions.Errors).
const (
	codeUnauthorized             = 40101
	codeForbidden                = 40301
	codeTooManyLogins            = 42901 // Tributary's: failed logins from one address
	codeSubjectNotFound          = 40401
	codeVersionNotFound          = 40402
	codeSchemaNotFound           = 40403
	codeSubjectSoftDeleted       = 40404
	codeSubjectNotSoftDeleted    = 40405
	codeVersionSoftDeleted       = 40406
	codeVersionNotSoftDeleted    = 40407
	codeSubjectCompatNotSet      = 40408
	codeSubjectModeNotSet        = 40409
	codeIncompatible             = 409 // Confluent 8.2 moved to 40901; clients (pkg/sr) still know 409
	codeInvalidSchema            = 42201
	codeInvalidVersion           = 42202
	codeInvalidCompatibility     = 42203
	codeInvalidMode              = 42204
	codeOperationNotPermitted    = 42205
	codeReferenceExists          = 42206
	codeInvalidSubject           = 42208
	codeSchemaTooLarge           = 42209
	codeInvalidRuleSet           = 42210
	codeContextNotEmpty          = 42211
	codeStoreError               = 50001
	codeOperationTimeout         = 50002
	codeBadRequest               = http.StatusBadRequest
	codeUnsupportedMediaType     = http.StatusUnsupportedMediaType
	codeNotFound                 = http.StatusNotFound
	codeMethodNotAllowed         = http.StatusMethodNotAllowed
	codeUnavailable              = http.StatusServiceUnavailable
	validCompatibilityLevelsText = "none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"
)

func errSubjectNotFound(s string) *apiError {
	return &apiError{codeSubjectNotFound, fmt.Sprintf("Subject '%s' not found.", s)}
}

func errVersionNotFound(v int) *apiError {
	return &apiError{codeVersionNotFound, fmt.Sprintf("Version %d not found.", v)}
}

func errSchemaNotFound() *apiError { return &apiError{codeSchemaNotFound, "Schema not found"} }

func errSchemaIDNotFound(id string) *apiError {
	return &apiError{codeSchemaNotFound, fmt.Sprintf("Schema %s not found", id)}
}

func errSubjectSoftDeleted(s string) *apiError {
	return &apiError{codeSubjectSoftDeleted, fmt.Sprintf("Subject '%s' was soft deleted. Set permanent=true to delete permanently", s)}
}

func errSubjectNotSoftDeleted(s string) *apiError {
	return &apiError{codeSubjectNotSoftDeleted, fmt.Sprintf("Subject '%s' was not deleted first before being permanently deleted", s)}
}

func errVersionSoftDeleted(s string, v int) *apiError {
	return &apiError{codeVersionSoftDeleted, fmt.Sprintf("Subject '%s' Version %d was soft deleted. Set permanent=true to delete permanently", s, v)}
}

func errVersionNotSoftDeleted(s string, v int) *apiError {
	return &apiError{codeVersionNotSoftDeleted, fmt.Sprintf("Subject '%s' Version %d was not deleted first before being permanently deleted", s, v)}
}

func errSubjectCompatNotSet(s string) *apiError {
	return &apiError{codeSubjectCompatNotSet, fmt.Sprintf("Subject '%s' does not have subject-level compatibility configured", s)}
}

func errSubjectModeNotSet(s string) *apiError {
	return &apiError{codeSubjectModeNotSet, fmt.Sprintf("Subject '%s' does not have subject-level mode configured", s)}
}

func errIncompatible(subject string, msgs []string) *apiError {
	return &apiError{codeIncompatible, fmt.Sprintf("Schema being registered is incompatible with an earlier schema for subject %q, details: %v", subject, msgs)}
}

func errInvalidSchema(format string, args ...any) *apiError {
	return &apiError{codeInvalidSchema, "Invalid schema: " + fmt.Sprintf(format, args...)}
}

func errInvalidVersion(v string) *apiError {
	return &apiError{codeInvalidVersion, fmt.Sprintf("The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", v)}
}

func errInvalidCompatibility(got string) *apiError {
	return &apiError{codeInvalidCompatibility, fmt.Sprintf("Invalid compatibility level %q. Valid values are %s", got, validCompatibilityLevelsText)}
}

func errInvalidMode(got string) *apiError {
	return &apiError{codeInvalidMode, fmt.Sprintf("Invalid mode %q. Valid values are %s", got, validModesText)}
}

func errNotPermitted(msg string) *apiError { return &apiError{codeOperationNotPermitted, msg} }

func errReferenceExists(subject string, num int, ids []int) *apiError {
	return &apiError{codeReferenceExists, fmt.Sprintf("One or more references exist to the schema {subject=%s,version=%d}: schema ids %v reference it; delete them first", subject, num, ids)}
}

func errInvalidSubject(s string) *apiError {
	return &apiError{codeInvalidSubject, fmt.Sprintf("The specified subject '%s' is not a valid subject name: it must be non-empty UTF-8 and contain no control characters", s)}
}

func errSchemaTooLarge(limit int) *apiError {
	return &apiError{codeSchemaTooLarge, fmt.Sprintf("Request body is larger than %d bytes", limit)}
}

func errInvalidRuleSet(format string, args ...any) *apiError {
	return &apiError{codeInvalidRuleSet, "Invalid rule set: " + fmt.Sprintf(format, args...)}
}

func errContextNotEmpty(ctx string) *apiError {
	return &apiError{codeContextNotEmpty, fmt.Sprintf("Context %s is not empty: delete its subjects permanently first", ctx)}
}

func errStore(op string, err error) *apiError {
	return &apiError{codeStoreError, fmt.Sprintf("%s failed while using the _schemas topic: %v", op, err)}
}

func errTimeout(op string) *apiError {
	return &apiError{codeOperationTimeout, op + " timed out waiting for the _schemas topic"}
}

func errBusy(slots int, waited time.Duration) *apiError {
	return &apiError{codeOperationTimeout, fmt.Sprintf("Schema registry is busy: %d other requests were reading or parsing schemas for %s; retry", slots, waited)}
}

func errBadRequest(format string, args ...any) *apiError {
	return &apiError{codeBadRequest, fmt.Sprintf(format, args...)}
}

func errUnavailable(why error) *apiError {
	return &apiError{codeUnavailable, fmt.Sprintf("Schema registry is unavailable: %v", why)}
}
