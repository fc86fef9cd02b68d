#!/usr/bin/env python3
"""Validates JSON documents against a JSON Schema (draft 2020-12) with python3-jsonschema.

    validate_json.py SCHEMA DOCUMENT...        exit 0 if every document is valid, else 1
    validate_json.py --expect-invalid SCHEMA DOCUMENT...   exit 0 if every document is invalid
"""
import json
import sys

import jsonschema


def main(argv):
    expect_invalid = argv[:1] == ["--expect-invalid"]
    if expect_invalid:
        argv = argv[1:]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    ok = True
    for path in argv[1:]:
        with open(path) as f:
            doc = json.load(f)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        if expect_invalid and not errors:
            print(f"{path}: valid, expected a schema error", file=sys.stderr)
            ok = False
        elif not expect_invalid and errors:
            for e in errors[:5]:
                print(f"{path}: {'/'.join(map(str, e.path))}: {e.message}", file=sys.stderr)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
