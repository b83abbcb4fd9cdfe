// Package registry is a schema registry that speaks the Confluent Schema
// Registry REST API (subjects, versions, global ids, compatibility levels,
// soft and hard deletes, Confluent's error codes), so existing serializers
// and tools work against it unchanged, and Confluent's modes (READWRITE,
// READONLY, READONLY_OVERRIDE, IMPORT; mode.go), schema references
// (references.go; jsonrefs.go for JSON, imports for Protobuf) and data
// contracts (metadata and rule sets, stored and never executed;
// contract.go). AVRO, JSON (jsonschema.go) and PROTOBUF (protobuf.go)
// schemas are stored.
//
// A node (Server) keeps no state of its own: it rebuilds everything by
// reading a Log, in production the one-partition _schemas topic on the
// broker (New), whose records have the layout Confluent's registry writes.
// What a caller may rely on:
//
//   - A write (registration, delete, level change) is answered only after
//     it is on the topic with acks=all and this node has read it back; a
//     node started later, or restarted after kill -9, serves it.
//   - Nodes sharing a topic agree on every id and version: a node reads the
//     topic to its end before deciding a registration, records are applied
//     first-writer-wins, and a registration that lost a race is decided
//     again. The same schema gets the same id under every subject.
//   - Ids are never reused, even after a hard delete; with a checkpoint
//     (Config.Checkpoint), not even after the topic is deleted or rewound:
//     such a node refuses writes until Config.AcceptReset (checkpoint.go).
//   - A node answers "not found" only after reading the topic to its end,
//     so what any node acknowledged is found on every node; lists reflect
//     what the node has read so far (milliseconds behind).
//   - Only what a registry could have written changes the state: a record
//     read back with an id or version outside 1..2^31-1, an id ahead of the
//     counter, a tombstone for a live version, or a schema that does not
//     parse within the limits is skipped and logged with its offset.
//   - A schema text is measured (bytes, depth, nodes, widths of unions,
//     records and enums) before it is parsed, and a compatibility check
//     runs within CheckTimeout outside the state's lock, so no request
//     costs more than the limits allow or holds up the others.
//   - A Node serves HTTP whatever state its log is in: while the log cannot
//     be opened or replayed it answers 503 with the reason, and retries.
//   - With Config.Auth, no request is served, and no reason for a 503
//     shown, without HTTP basic credentials of a user whose role covers it
//     (RequiredRole): 401 (40101) without valid credentials, 403 (40301)
//     without the role. Passwords are checked against the broker's SCRAM
//     keys; none is stored. With Config.TLS, only HTTPS is served.
//
// "The same schema" means, for Avro, the same parsing canonical form
// extended with what changes a reader's view (logical types, defaults,
// aliases; see schema/internal/avsc.Key) and the same references; for
// JSON, the same canonical JSON; for Protobuf, the same compiled
// descriptor. Avro compatibility follows the Avro specification's
// resolution rules as implemented by github.com/hamba/avro; JSON and
// Protobuf compatibility, Confluent's rules (jsoncompat.go, protobuf.go).
package registry
