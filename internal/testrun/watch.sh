#!/bin/sh
# watch.sh COMMAND...: runs COMMAND and prints a line every 20 s while it
# runs, so that make test's steps other than go test (go vet, builds from a
# cold cache: minutes) show progress in a log. The exit status is
# COMMAND's.
start=$(date +%s)
(while sleep 20 </dev/null >/dev/null 2>&1; do echo "      ... $(($(date +%s) - start))s: $*"; done) &
watcher=$!
"$@"
status=$?
kill "$watcher" 2>/dev/null
exit $status
