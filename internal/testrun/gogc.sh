#!/bin/sh
# make test's -toolexec: runs each build tool (the compiler, the linker,
# vet, asm) with the garbage collector at GOGC=400 instead of 100. Compiling
# is most of what make test costs on a fresh machine; a compiler that
# collects a quarter as often spends 10-18% less CPU on it (bench/TESTSUITE.md),
# for a few hundred MB more memory per compile. The tests themselves, and
# the servers they start, run with the GOGC they would have anyway: go test
# does not run test binaries through -toolexec.
GOGC=400 exec "$@"
