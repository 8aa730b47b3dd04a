#!/usr/bin/env python3
"""Turn VCR cassettes of real Anthropic Messages calls into usage samples.

Reads every `*.yaml` / `*.yml` cassette under the directories given on the
command line (vcrpy's format, as pydantic-ai, openllmetry, openinference,
mirascope and llm-anthropic record them) and writes one JSON line per
interaction that has a request body and a reported input count:

    {"source": "<file>#<i>", "model": ..., "request": {...},
     "input_tokens": N, "cache_creation_input_tokens": N,
     "cache_read_input_tokens": N, "endpoint": "messages" | "count_tokens"}

Streamed responses (server-sent events) are read from their `message_start`
event, with a later `message_delta` usage winning where it reports inputs.
Gzip bodies (`!!binary`) are decompressed. Interactions that failed (no
usage), or that went to another host (Bedrock, Vertex), are skipped.

    python3 cassettes_to_samples.py DIR... > samples.jsonl
    CUPEL_ANTHROPIC_SAMPLES=samples.jsonl \
        cargo run -p cupel-rs-chat --example anthropic_accuracy

Needs PyYAML. The cassettes are not part of this repository.
"""

import base64
import gzip
import json
import os
import sys

import yaml


class Loader(yaml.SafeLoader):
    pass


def _binary(loader, node):
    return base64.b64decode(loader.construct_scalar(node))


Loader.add_constructor("tag:yaml.org,2002:binary", _binary)


def text_of(body):
    """The body as text: a string, bytes (maybe gzip), or vcr's {string: ...}."""
    if isinstance(body, dict):
        body = body.get("string")
    if body is None:
        return None
    if isinstance(body, bytes):
        if body[:2] == b"\x1f\x8b":
            body = gzip.decompress(body)
        return body.decode("utf-8", "replace")
    return body


def request_json(req):
    if isinstance(req.get("parsed_body"), dict):
        return req["parsed_body"]
    t = text_of(req.get("body"))
    if not t:
        return None
    try:
        v = json.loads(t)
    except ValueError:
        return None
    return v if isinstance(v, dict) else None


def usage_of(resp):
    """(usage dict, endpoint kind) from a JSON or event-stream response."""
    body = resp.get("parsed_body")
    if isinstance(body, dict):
        if "usage" in body:
            return body["usage"]
        if "input_tokens" in body and "type" not in body:
            return {"input_tokens": body["input_tokens"]}
        return None
    if isinstance(body, list):  # pydantic-ai stores streams as a list of events
        events = body
    else:
        t = text_of(resp.get("body"))
        if not t:
            return None
        try:
            v = json.loads(t)
        except ValueError:
            v = None
        if isinstance(v, dict):
            if "usage" in v:
                return v["usage"]
            if "input_tokens" in v and "type" not in v:
                return {"input_tokens": v["input_tokens"]}
            return None
        events = []
        for line in t.splitlines():
            if line.startswith("data:"):
                try:
                    events.append(json.loads(line[5:].strip()))
                except ValueError:
                    pass
    usage = None
    for e in events:
        if not isinstance(e, dict):
            continue
        if e.get("type") == "message_start":
            usage = dict((e.get("message") or {}).get("usage") or {})
        elif e.get("type") == "message_delta" and usage is not None:
            for k, v in (e.get("usage") or {}).items():
                if k.endswith("input_tokens") and v is not None:
                    usage[k] = v
    return usage


def interactions(path):
    with open(path, "rb") as f:
        doc = yaml.load(f, Loader=Loader)
    if isinstance(doc, dict):
        return doc.get("interactions") or []
    return []


def main(dirs):
    out = sys.stdout
    for root in dirs:
        for d, _, files in os.walk(root):
            for name in sorted(files):
                if not name.endswith((".yaml", ".yml")):
                    continue
                path = os.path.join(d, name)
                try:
                    its = interactions(path)
                except Exception as e:  # noqa: BLE001 - report and go on
                    print(f"skip {path}: {e}", file=sys.stderr)
                    continue
                for i, it in enumerate(its):
                    req, resp = it.get("request") or {}, it.get("response") or {}
                    uri = req.get("uri") or ""
                    if "api.anthropic.com/v1/messages" not in uri:
                        continue
                    if (resp.get("status") or {}).get("code") != 200:
                        continue
                    body = request_json(req)
                    usage = usage_of(resp)
                    if not body or not usage or usage.get("input_tokens") is None:
                        continue
                    rel = os.path.relpath(path, root)
                    out.write(
                        json.dumps(
                            {
                                "source": f"{os.path.basename(os.path.normpath(root))}/{rel}#{i}",
                                "model": body.get("model"),
                                "endpoint": "count_tokens" if "count_tokens" in uri else "messages",
                                "request": body,
                                "input_tokens": usage.get("input_tokens") or 0,
                                "cache_creation_input_tokens": usage.get("cache_creation_input_tokens") or 0,
                                "cache_read_input_tokens": usage.get("cache_read_input_tokens") or 0,
                            }
                        )
                        + "\n"
                    )


if __name__ == "__main__":
    main(sys.argv[1:])
