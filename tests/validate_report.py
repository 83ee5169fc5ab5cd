#!/usr/bin/python3
"""Validates tleak reports against schema/tleak.report.schema.json: validate_report.py SCHEMA REPORT..."""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
failed = False
for path in sys.argv[2:]:
    for error in validator.iter_errors(json.load(open(path))):
        failed = True
        print(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
sys.exit(1 if failed else 0)
