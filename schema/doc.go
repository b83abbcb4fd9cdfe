// Package schema turns application events into Kafka record values and back,
// in the format every Confluent-compatible tool understands: the envelope
// (magic byte 0, 4-byte big-endian schema id, Avro binary body) with the
// schema itself kept in a schema registry (see package schema/registry for
// ours; any Confluent-compatible registry works).
//
// There are only a few types:
//
//   - Serializer encodes a map[string]any (goavro's native form) or a Go
//     struct (hamba/avro `avro` tags) under one writer schema, registering
//     that schema once per subject and caching the id, and fills the
//     event header (time, server, service, guid) where the application
//     leaves it empty.
//   - HeaderLayout is the one rule that finds an event's header and time
//     (the top-level field "header" or one the user names, whatever the
//     record is called); the serializer, the loader and every audit tier
//     use it, so they agree on every event's time. It reads the time from
//     the encoded body without decoding the event, and its Check tells
//     whether a body is one whole value of its schema, also without
//     decoding: the loader copies bodies into files after only these two.
//   - Deserializer decodes an envelope, fetching each writer schema once by
//     id, and optionally resolves it to a reader schema (schema evolution).
//     Records of Protobuf and JSON Schema writer schemas (Confluent's wire
//     format) are read as Avro: converted to the Avro encoding of their
//     value under an Avro schema derived from theirs (foreign.go,
//     internal/transcode), so every reader of Avro reads them too.
//   - JSONEvents reads events typed as plain JSON (bare union values,
//     RFC 3339 times, header optional) into the native form Serializer
//     takes, naming the field that does not fit; the CLI's producer uses it.
//   - Registry is the part of a registry client they need;
//     *github.com/twmb/franz-go/pkg/sr.Client implements it.
//
// What a caller may rely on: a value from Serialize decodes with any
// Confluent Avro deserializer; a value that Deserialize accepts decoded
// completely, with no byte left over; decoding allocates in proportion to
// the value's size, whatever counts and lengths its bytes claim; and every
// failure to decode says which part was wrong (ErrWrongMagic,
// ErrTruncated, ErrUnknownID, ErrBadBody).
//
// # Which Avro library does what
//
// Two libraries, each for the jobs it does and the other does not:
//
//   - github.com/hamba/avro owns schemas and structs: parsing into a
//     typed schema tree (HeaderLayout, the body walker and JSONEvents
//     inspect it), schema identity, compatibility and resolution (the
//     registry, a Deserializer with a reader schema), and encoding and
//     decoding Go structs. goavro's Codec is opaque and checks no
//     compatibility, so none of this could move to it.
//   - github.com/linkedin/goavro owns values as maps: Serializer and
//     Deserializer encode and decode map[string]any with it, and container
//     files are read with it (the audit's warehouse count, the loader's
//     tests). Its native form names every union branch ({"string": "x"}),
//     so a map says which branch was written and re-encodes to the same
//     bytes; hamba's generic values leave the branch out wherever the Go
//     type decides it (string or uuid, date or timestamp-millis), which is why
//     even a resolved map is finished by goavro. A schema is accepted only
//     if both parse it, so the registry never hands out one the serializer
//     cannot use.
//   - Neither decodes what is only copied: the loader checks bodies with
//     HeaderLayout.Check and writes container files with its own writer,
//     which takes bodies as they are (goavro's writer wants decoded values;
//     loader/ocf.go has the measurements against both libraries).
package schema
