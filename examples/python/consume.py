#!/usr/bin/env python3
"""Read gatehouse's webhook topics the way a data team does, with no Go.

Reads one or more gatehouse.webhooks.<provider> topics from the beginning
with confluent-kafka, parses every record with the official CloudEvents
SDK's Kafka binding (binary content mode: ce_* headers, JSON value),
validates the value and the headers with jsonschema against gatehouse's
published schemas (schemas/record-value.schema.json,
schemas/record-headers.schema.json, formats checked), and deduplicates by
(ce_source, ce_id): delivery is at least once, so the same event can
arrive again after a relay crash or a re-publish. An erasure notice
(ce_type gatehouse.erasure, schemas/erasure-notice.schema.json) is not an
event: the reader erases its own copies of the events it names.

Output, one JSON object per line on stdout:
  {"event": {...}}      a new, valid event (topic, partition, offset, key,
                        id, source, type, time as the header's exact text,
                        outbox_id, data)
  {"duplicate": {...}}  a record of an event already seen: skipped
  {"erasure": {...}}    an erasure notice: erasure_id, event_ids, and the
                        ids of the copies this reader held and erased
  {"rejected": {...}}   a record that breaks the contract, with the reason
and a summary on stderr. Exit status 0 when no record was rejected, 1
otherwise, 2 on a usage or connection error.

Example:
  python consume.py --bootstrap-servers localhost:9092 \\
      --topic gatehouse.webhooks.stripe --topic gatehouse.webhooks.github

A real job keeps the seen ids in its own store (a table keyed by
source and id, written in the same transaction as the effect) and commits
offsets after processing; this example keeps them in memory and stops
once the topics have been idle for --idle-timeout seconds.
"""

import argparse
import json
import os
import sys
import time
import uuid

from cloudevents.core.bindings.kafka import KafkaMessage, from_binary
from cloudevents.core.formats.json import JSONFormat
from confluent_kafka import Consumer, KafkaError, KafkaException
from jsonschema import Draft202012Validator

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SCHEMAS = os.path.join(HERE, "..", "..", "schemas")


def load_validator(schemas_dir, name):
    with open(os.path.join(schemas_dir, name), encoding="utf-8") as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def headers_of(msg):
    """Kafka headers as a dict of name to bytes; a repeated name is refused."""
    out = {}
    for name, value in msg.headers() or []:
        if name in out:
            raise ValueError(f"header {name} appears twice")
        out[name] = value if value is not None else b""
    return out


ERASURE_NOTICE = "gatehouse.erasure"


class Reader:
    def __init__(self, schemas_dir):
        self.value_schema = load_validator(schemas_dir, "record-value.schema.json")
        self.headers_schema = load_validator(schemas_dir, "record-headers.schema.json")
        self.notice_schema = load_validator(schemas_dir, "erasure-notice.schema.json")
        self.seen = set()
        # The reader's copies of the events, by (source, id): what a real
        # job stores, and what an erasure notice makes it erase.
        self.copies = {}
        self.counts = {"event": 0, "duplicate": 0, "erasure": 0, "rejected": 0}

    def handle(self, msg):
        where = {"topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset()}
        try:
            raw_headers = headers_of(msg)
            text_headers = {k: v.decode("utf-8") for k, v in raw_headers.items()}
            errors = sorted(e.message for e in self.headers_schema.iter_errors(text_headers))
            if errors:
                raise ValueError("headers: " + "; ".join(errors))
            value = json.loads(msg.value().decode("utf-8"))
            notice = text_headers.get("ce_type") == ERASURE_NOTICE
            schema = self.notice_schema if notice else self.value_schema
            errors = sorted(e.message for e in schema.iter_errors(value))
            if errors:
                raise ValueError("value: " + "; ".join(errors))
            event = from_binary(KafkaMessage(headers=raw_headers, key=msg.key(), value=msg.value()), JSONFormat())
        except Exception as err:  # noqa: BLE001 - any broken record is reported, never fatal
            self.emit("rejected", dict(where, error=f"{type(err).__name__}: {err}"))
            return
        dedupe_key = (event.get_source(), event.get_id())
        if dedupe_key in self.seen:
            self.emit("duplicate", dict(where, id=event.get_id(), source=event.get_source()))
            return
        self.seen.add(dedupe_key)
        if notice:
            # Not an event: erase every copy of the events it names (the
            # notice follows them in their partition).
            erased = [i for i in value["event_ids"] if self.copies.pop((event.get_source(), i), None) is not None]
            self.emit("erasure", dict(where, id=event.get_id(), erasure_id=value["erasure_id"],
                                      event_ids=value["event_ids"], erased=erased))
            return
        self.copies[dedupe_key] = event.get_data()
        sdk_time = event.get_time()
        self.emit("event", dict(
            where,
            key=msg.key().decode("utf-8") if msg.key() is not None else None,
            id=event.get_id(),
            source=event.get_source(),
            type=event.get_type(),
            # The header's exact text: Python's datetime (the SDK's time)
            # holds microseconds only.
            time=text_headers.get("ce_time"),
            sdk_time=sdk_time.isoformat() if sdk_time else None,
            partitionkey=event.get_extension("partitionkey"),
            outbox_id=text_headers.get("gatehouse_outbox_id"),
            data=event.get_data(),
        ))

    def emit(self, kind, body):
        self.counts[kind] += 1
        sys.stdout.write(json.dumps({kind: body}, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("Example:")[1].split("\n\n")[0].strip(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-servers", required=True, help="Kafka seed brokers, host:port[,host:port]")
    p.add_argument("--topic", action="append", required=True, help="a topic to read (repeatable)")
    p.add_argument("--schemas", default=DEFAULT_SCHEMAS, help="directory of gatehouse's JSON Schemas (default: the repository's schemas/)")
    p.add_argument("--group-id", default="", help="consumer group (default: a new one, so reading starts at the beginning)")
    p.add_argument("--idle-timeout", type=float, default=10.0, help="stop after this many seconds without a record (default 10)")
    args = p.parse_args(argv)

    if "date-time" not in Draft202012Validator.FORMAT_CHECKER.checkers:
        print("jsonschema cannot check date-time: install rfc3339-validator (requirements.txt)", file=sys.stderr)
        return 2
    reader = Reader(args.schemas)
    consumer = Consumer({
        "bootstrap.servers": args.bootstrap_servers,
        "group.id": args.group_id or "gatehouse-example-" + uuid.uuid4().hex[:12],
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    assigned = []

    def on_assign(c, partitions):
        assigned.extend(partitions)

    try:
        consumer.subscribe(args.topic, on_assign=on_assign)
        # The idle clock starts once the group has given us partitions
        # (joining a group takes a few seconds); give up after a minute.
        start, last = time.monotonic(), None
        while True:
            now = time.monotonic()
            if last is None and assigned:
                last = now
            if last is None and now - start > 60:
                print("kafka: no partitions assigned within 60 s (do the topics exist?)", file=sys.stderr)
                return 2
            if last is not None and now - last >= args.idle_timeout:
                break
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() in (KafkaError._PARTITION_EOF, KafkaError.UNKNOWN_TOPIC_OR_PART):
                    continue
                raise KafkaException(msg.error())
            last = time.monotonic()
            reader.handle(msg)
    except KafkaException as err:
        print(f"kafka: {err}", file=sys.stderr)
        return 2
    finally:
        consumer.close()
    print(json.dumps({"summary": reader.counts}), file=sys.stderr)
    return 1 if reader.counts["rejected"] else 0


if __name__ == "__main__":
    sys.exit(main())
