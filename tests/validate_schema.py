#!/usr/bin/env python3
"""Validates JSON files against a fusecal schema with the python jsonschema
package (an independent validator, to cross-check fusecal's own)."""
import json
import sys

import jsonschema


def main():
    if len(sys.argv) < 3:
        print("usage: validate_schema.py SCHEMA FILE...", file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    bad = 0
    for path in sys.argv[2:]:
        with open(path) as f:
            doc = json.load(f, parse_constant=lambda c: float(c))
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        for e in errors[:5]:
            print(f"{path}: {'/'.join(map(str, e.path))}: {e.message}", file=sys.stderr)
        bad += bool(errors)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
