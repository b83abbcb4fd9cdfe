#!/usr/bin/env python3
"""Confluent's Python schema registry client against a Tributary registry
served over HTTPS with basic auth.

usage: registry_basic_auth.py URL CA_FILE
  env WRITER_USER_INFO, READER_USER_INFO: basic.auth.user.info values
  (user:password) of a user with the writer role and one with the reader role.

The writer registers a schema and fetches it back by id and by subject;
the reader fetches it but is refused a registration with 403 (40301); no
credentials get 401 (40101).
"""
import json
import os
import sys

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

url, ca = sys.argv[1], sys.argv[2]
subject = "pageviews-value"
text = json.dumps({"type": "record", "name": "PageView",
                   "fields": [{"name": "memberId", "type": "long"}, {"name": "pageKey", "type": "string"}]})


def client(user_info):
    conf = {"url": url, "ssl.ca.location": ca}
    if user_info:
        conf["basic.auth.user.info"] = user_info
    return SchemaRegistryClient(conf)


def expect_refused(what, code, fn):
    try:
        fn()
    except SchemaRegistryError as e:
        if e.error_code != code:
            sys.exit(f"{what}: error_code {e.error_code} ({e.error_message}), want {code}")
        print(f"{what}: refused with {e.http_status_code} {e.error_code}")
        return
    sys.exit(f"{what}: succeeded, want error_code {code}")


writer = client(os.environ["WRITER_USER_INFO"])
sid = writer.register_schema(subject, Schema(text, "AVRO"))
got = writer.get_schema(sid)
if json.loads(got.schema_str) != json.loads(text):
    sys.exit(f"schema {sid} came back as {got.schema_str}")
latest = writer.get_latest_version(subject)
if latest.schema_id != sid or latest.version != 1:
    sys.exit(f"latest version of {subject}: id {latest.schema_id} version {latest.version}, want id {sid} version 1")
print(f"writer registered and fetched schema id {sid}")

reader = client(os.environ["READER_USER_INFO"])
if json.loads(reader.get_schema(sid).schema_str) != json.loads(text):
    sys.exit("the reader fetched another schema")
print("reader fetched it")
other = json.dumps({"type": "record", "name": "Click", "fields": [{"name": "x", "type": "int"}]})
expect_refused("reader registering", 40301, lambda: reader.register_schema("clicks-value", Schema(other, "AVRO")))
expect_refused("no credentials", 40101, lambda: client(None).get_subjects())
print("ok")
