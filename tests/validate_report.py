#!/usr/bin/python3
"""Validates tleak reports: validate_report.py SCHEMA REPORT...

Each report must match schema/tleak.report.schema.json and hold the invariants every report holds,
whatever produced it (a scenario, a program, a snapshot):
  - the peak had every block been freed at its last use is at most the peak (each site, and total);
  - a site's final live bytes are at most its peak; its frees at most its allocations;
  - a site's blocks not freed are leaked, reachable or unjudged: allocations - frees equals their sum
    (in a final report; a snapshot's are simply live);
  - the sites' leaked bytes (and reachable, unjudged) add up to the totals, omitted sites included;
  - every site's samples are aligned with the timeline (or empty, in a large report);
  - no timeline sample is above the total peak.
"""
import json
import sys

import jsonschema


def invariants(report):
    problems = []
    totals = report["totals"]
    peak = totals["peak_live_bytes"]
    samples = len(report["timeline"]["samples"])
    if report["total_retained"]["peak_if_freed_at_last_use_bytes"] > peak:
        problems.append("total: freed-at-last-use peak above the peak")
    program = report["run"].get("program") or {}
    final = program.get("snapshot") is None  # a snapshot is mid-run: its live blocks are just live
    sums = {"leaked_bytes": 0, "reachable_at_exit_bytes": 0, "unjudged_at_exit_bytes": 0}
    for key in sums:
        sums[key] = report["omitted_sites"].get(key, 0)
    for site in report["sites"]:
        where = f"site {site['id']} ({site['label']})"
        if site["retained"]["peak_if_freed_at_last_use_bytes"] > site["peak_live_bytes"]:
            problems.append(f"{where}: freed-at-last-use peak above its peak")
        if site["final_live_bytes"] > site["peak_live_bytes"]:
            problems.append(f"{where}: final live bytes above its peak")
        if site["frees"] > site["allocations"]:
            problems.append(f"{where}: more frees than allocations")
        left = site["leaked_blocks"] + site["reachable_at_exit_blocks"] + site["unjudged_at_exit_blocks"]
        if final and report["run"]["tracked"] and site["allocations"] - site["frees"] != left:
            problems.append(f"{where}: {site['allocations'] - site['frees']} blocks not freed but {left} accounted for")
        if len(site["live_bytes_at_samples"]) not in (samples, 0) or (
                not site["live_bytes_at_samples"] and samples and len(report["sites"]) <= 1000):
            problems.append(f"{where}: {len(site['live_bytes_at_samples'])} samples for {samples} in the timeline")
        for key in ("leaked_bytes", "reachable_at_exit_bytes", "unjudged_at_exit_bytes"):
            sums[key] += site[key]
    if report["run"]["tracked"]:
        for key, total in sums.items():
            if total != totals[key]:
                problems.append(f"sites' {key} add up to {total}, totals say {totals[key]}")
    for sample in report["timeline"]["samples"]:
        if sample["live_bytes"] > peak:
            problems.append(f"timeline sample {sample['iteration']} above the peak")
    return problems


schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
failed = False
for path in sys.argv[2:]:
    report = json.load(open(path))
    errors = list(validator.iter_errors(report))
    for error in errors:
        failed = True
        print(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
    if not errors:
        for problem in invariants(report):
            failed = True
            print(f"{path}: {problem}")
sys.exit(1 if failed else 0)
