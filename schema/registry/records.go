package registry

import (
	"encoding/json"
	"fmt"
)

// The records on the _schemas topic use the key and value layouts of
// Confluent Schema Registry's own _schemas topic (JSON, keyed by type), so
// the topic can be inspected with the same tools and read by either
// implementation:
//
//	SCHEMA          key {subject, version}  value {subject, version, id, schema, deleted}
//	                                         null value: the version was hard-deleted
//	CONFIG          key {subject|null}      value {compatibilityLevel}; null value: reset
//	DELETE_SUBJECT  key {subject}           value {subject, version}: soft-delete all
//	                                         versions up to version, in one record
//	MODE            key {subject|null}      value {mode}; null value: reset (mode.go)
//
//	CONTEXT         key {tenant, context}   value {tenant, context}: the context has
//	                                         subjects (for Confluent's nodes; skipped
//	                                         on replay here, see context.go)
//
//	NOOP            key {tributaryIdFloor}    value {tributaryIdFloor}: schema ids up to
//	                                         the floor were handed out (checkpoint.go)
//
// Other key types and NOOP keys without a floor are skipped on
// replay. The floor is in the key so that compaction keeps it: Confluent's
// registry writes NOOP records with a key of their own.
const (
	keySchema        = "SCHEMA"
	keyConfig        = "CONFIG"
	keyDeleteSubject = "DELETE_SUBJECT"
	keyNoop          = "NOOP"
	keyMode          = "MODE"
	keyContext       = "CONTEXT"
)

// recordKey is the union of the key layouts; which fields are set depends
// on Type.
type recordKey struct {
	Type    string  `json:"keytype"`
	Subject *string `json:"subject"`
	Version int     `json:"version,omitempty"`
	Magic   int     `json:"magic"`
	IDFloor int     `json:"tributaryIdFloor,omitempty"` // NOOP
}

type schemaValue struct {
	Subject    string          `json:"subject"`
	Version    int             `json:"version"`
	ID         int             `json:"id"`
	Schema     string          `json:"schema"`
	SchemaType string          `json:"schemaType,omitempty"`
	References json.RawMessage `json:"references,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"` // contract.go
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	Deleted    bool            `json:"deleted"`
}

// versionRecord is the SCHEMA record of a version of sch.
func versionRecord(subject string, num, id int, sch *schemaDoc, refs []schemaRef, deleted bool) Record {
	v := schemaValue{Subject: subject, Version: num, ID: id, Schema: sch.Text, SchemaType: sch.showType(), References: refsJSON(refs), Deleted: deleted}
	if m := sch.contract.metadataOrNil(); m != nil {
		v.Metadata = mustJSON(m)
	}
	if rs := sch.contract.ruleSetOrNil(); rs != nil {
		v.RuleSet = mustJSON(rs)
	}
	return schemaRecord(v)
}

type configValue struct {
	Level string `json:"compatibilityLevel,omitempty"`
	Group string `json:"compatibilityGroup,omitempty"` // contract.go
}

type deleteSubjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("registry: encode record: %v", err)) // only our own plain structs get here
	}
	return b
}

func schemaRecord(v schemaValue) Record {
	s := v.Subject
	return Record{
		Key:   mustJSON(recordKey{Type: keySchema, Subject: &s, Version: v.Version, Magic: 1}),
		Value: mustJSON(v),
	}
}

func tombstoneRecord(subject string, version int) Record {
	return Record{Key: mustJSON(recordKey{Type: keySchema, Subject: &subject, Version: version, Magic: 1})}
}

// configRecord sets (level != "") or resets the compatibility level of
// subject, or the global level when subject is "".
func configRecord(subject, level string) Record {
	if level == "" {
		return configValueRecord(subject, nil)
	}
	return configValueRecord(subject, &configValue{Level: level})
}

// configValueRecord sets (v != nil) or resets the config of subject, or
// the global one when subject is "".
func configValueRecord(subject string, v *configValue) Record {
	k := recordKey{Type: keyConfig}
	if subject != "" {
		k.Subject = &subject
	}
	r := Record{Key: mustJSON(k)}
	if v != nil {
		r.Value = mustJSON(v)
	}
	return r
}

type modeValue struct {
	Mode string `json:"mode"`
}

// modeRecord sets (mode != "") or resets the mode of subject, or the
// global mode when subject is "".
func modeRecord(subject, mode string) Record {
	k := recordKey{Type: keyMode}
	if subject != "" {
		k.Subject = &subject
	}
	r := Record{Key: mustJSON(k)}
	if mode != "" {
		r.Value = mustJSON(modeValue{Mode: mode})
	}
	return r
}

func deleteSubjectRecord(subject string, upTo int) Record {
	return Record{
		Key:   mustJSON(recordKey{Type: keyDeleteSubject, Subject: &subject}),
		Value: mustJSON(deleteSubjectValue{Subject: subject, Version: upTo}),
	}
}

// contextRecord says a context exists, as Confluent's registry writes it
// (tenant "default": this registry has no tenants).
func contextRecord(ctx string) Record {
	type contextKey struct {
		Type    string `json:"keytype"`
		Tenant  string `json:"tenant"`
		Context string `json:"context"`
		Magic   int    `json:"magic"`
	}
	type contextValue struct {
		Tenant  string `json:"tenant"`
		Context string `json:"context"`
	}
	return Record{
		Key:   mustJSON(contextKey{Type: keyContext, Tenant: "default", Context: ctx}),
		Value: mustJSON(contextValue{Tenant: "default", Context: ctx}),
	}
}

// idFloorRecord says that schema ids up to floor were handed out.
func idFloorRecord(floor int) Record {
	return Record{
		Key: mustJSON(recordKey{Type: keyNoop, IDFloor: floor}),
		Value: mustJSON(struct {
			IDFloor int `json:"tributaryIdFloor"`
		}{floor}),
	}
}
