#!/usr/bin/env bash
# testsuite-table.sh FILE: the per-package table (seconds each package's
# tests ran, summed over its runs: with and without -race) and the slowest
# tests, from the go test -json events that TESTRUN_JSON=FILE kept.
set -euo pipefail
python3 - "$1" <<'PY'
import json, sys, collections
pk = collections.defaultdict(float)
tests = []
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("Action") in ("pass", "fail") and "Elapsed" in e:
        p = e.get("Package", "").replace("github.com/bloomkit/bloomkit/", "") or "."
        if e.get("Test"):
            if "/" not in e["Test"]:
                tests.append((e["Elapsed"], p, e["Test"]))
        else:
            pk[p] += e["Elapsed"]
print("| package | seconds |\n|:--|--:|")
for p, s in sorted(pk.items(), key=lambda x: -x[1]):
    if s >= 1:
        print(f"| {p} | {s:.1f} |")
print("\n| slowest tests | package | seconds |\n|:--|:--|--:|")
for s, p, t in sorted(tests, reverse=True)[:15]:
    print(f"| {t} | {p} | {s:.1f} |")
PY
