#!/usr/bin/env bash
# Measures `make test` (or another target) as CI meets it: a fresh clone of
# this repository's HEAD with ../shared beside it, an empty Go build cache
# and the module cache as it is (download the modules first: .ci/run does).
# Prints the run's output, then wall time, user and system CPU seconds
# (/usr/bin/time -v) and the load average sampled every 10 s during the
# run; bench/TESTSUITE.md records the results.
#
# Usage: bench/testsuite.sh [TARGET]    (default: test)
#
# TESTRUN_JSON=FILE keeps every go test -json event (internal/testrun), from
# which bench/testsuite-table.sh makes the per-package table.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-test}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$root" "$work/bloomkit"
if [ -d "$root/../shared" ]; then
	ln -s "$(cd "$root/../shared" && pwd)" "$work/shared"
fi
export GOCACHE="$work/gocache"
# What CI requires (.ci/run): a missing tool fails the run instead of
# skipping tests.
export BLOOMKIT_REQUIRE_REDIS=1 BLOOMKIT_REQUIRE_PG=1 BLOOMKIT_REQUIRE_DICT=1 \
	BLOOMKIT_REQUIRE_JAVA=1 BLOOMKIT_REQUIRE_PROMTOOL=1 BLOOMKIT_REQUIRE_EXPORTER=1 BLOOMKIT_REQUIRE_SYSTEMD=1
echo "make $target in a fresh clone of $(git -C "$root" rev-parse --short HEAD), GOCACHE empty, $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
(while sleep 10; do cut -d' ' -f1 /proc/loadavg; done) >"$work/load" &
sampler=$!
status=0
/usr/bin/time -v -o "$work/time" make -C "$work/bloomkit" "$target" || status=$?
kill "$sampler"
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time")
user=$(sed -n 's/.*User time (seconds): //p' "$work/time")
sys=$(sed -n 's/.*System time (seconds): //p' "$work/time")
load=$(sort -n "$work/load" | awk '{a[NR]=$1; s+=$1} END {if (NR) printf "min %s, mean %.1f, max %s over %d samples", a[1], s/NR, a[NR], NR}')
echo
echo "make $target: exit $status; wall $wall, user ${user}s, sys ${sys}s, user+sys $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')s; load average during the run: $load"
exit $status
