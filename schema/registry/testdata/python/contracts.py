"""Confluent's Python client registers an Avro schema with a data contract
(metadata and a rule set) in a Tributary registry, reads it back, and
round-trips a record with AvroSerializer set to use the latest version.
The registry stores rules and never runs them; the rule here is disabled,
so the client does not run it either.

usage: contracts.py REGISTRY_URL BOOTSTRAP TOPIC"""
import json

from confluent_kafka.schema_registry import (Metadata, MetadataProperties, MetadataTags, Rule, RuleKind, RuleMode,
                                             RuleParams, RuleSet, Schema)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

from serde import client, ctx, expect_equal, fail, round_trip, topic

subject = topic + "-value"
text = json.dumps({"type": "record", "name": "Page", "fields": [{"name": "url", "type": "string"}]})
metadata = Metadata(tags=MetadataTags({"Page.url": ["PII"]}), properties=MetadataProperties({"owner": "web", "major": "1"}),
                    sensitive=["Page.url"])
rule = Rule("urlNotEmpty", "checks the url", RuleKind.CONDITION, RuleMode.WRITE, "CEL", None,
            RuleParams({"k": "v"}), "message.url != ''", None, "ERROR", True)
schema_id = client.register_schema(subject, Schema(text, "AVRO", metadata=metadata, rule_set=RuleSet(None, [rule])))

latest = client.get_latest_version(subject)
got_meta = latest.schema.metadata
if got_meta is None or got_meta.properties.properties != {"owner": "web", "major": "1"} or got_meta.sensitive != ["Page.url"]:
    fail("metadata came back as %r" % got_meta)
rules = latest.schema.rule_set.domain_rules if latest.schema.rule_set else []
if [(r.name, r.kind, r.mode, r.type, r.expr, r.disabled) for r in rules] != [
        ("urlNotEmpty", RuleKind.CONDITION, RuleMode.WRITE, "CEL", "message.url != ''", True)]:
    fail("rule set came back as %r" % latest.schema.rule_set)
print("contract stored and returned with schema", schema_id)

ser = AvroSerializer(client, None, conf={"auto.register.schemas": False, "use.latest.version": True})
deser = AvroDeserializer(client)
record = {"url": "/home"}
expect_equal(deser(round_trip(ser(record, ctx), "contracts"), ctx), record)

# The same text with another owner is another schema, with another id.
other = client.register_schema(subject, Schema(text, "AVRO", metadata=Metadata(None, MetadataProperties({"owner": "ads"}), None)))
if other == schema_id:
    fail("another contract got the same id %d" % other)
print("another contract is another schema:", other)
