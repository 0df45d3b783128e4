#!/bin/sh
# Instructions, L1 data misses and simulated last-level misses per lookup,
# from valgrind's cachegrind. For each kind of lookup, two runs of
# `lookupdist -one` differ only in how many lookups they do; the difference
# of their counts, divided by the difference of lookups, is one lookup's
# cost, the filter's build cancelling out. Counted are the lookup loop
# (main.one) and the libraries' functions (the filter's methods, the
# hash); the rest, the Go runtime's background work (scavenger, timers),
# grows with the run's duration instead and is shown separately. The
# garbage collector is off (GOGC=off): the lookups allocate nothing, and a
# collection's work depends on when it starts.
# The simulated caches are this machine's (L1d 48 KiB 12-way, last level
# 32 MiB 16-way, 64-byte lines).
#
# Usage: cd bench && [N=1000000] ./cachegrind.sh [kind ...]
# kinds: blocked/hit blocked/miss (NewBlocked: hash id 4, XXH3-64),
# blocked1/hit blocked1/miss (the same filter with hash id 1, XXH3-128, as
# files of earlier versions have), blobloom/hit blobloom/miss bab/hit
# bab/miss filter/hit filter/miss blocked/many (TestMany at 100M). N is the
# keys in the single-key filters (default 10M). Prints Markdown.
# KEYLEN=bytes makes every key that long (lookupdist -keylen) instead of
# the URL-like keys of 58–62 bytes.
# LOOKUPDIST=binary uses a lookupdist built elsewhere (say, from the code
# before a change) instead of building this directory's.
set -e
kinds=${*:-blocked/hit blocked/miss blocked1/hit blocked1/miss blobloom/hit blobloom/miss bab/hit bab/miss blocked/many}
N=${N:-10000000}
lo=50000
hi=250000
dir=$(mktemp -d)
if [ -n "$LOOKUPDIST" ]; then
	cp "$LOOKUPDIST" "$dir/lookupdist"
else
	go build -o "$dir/lookupdist" ./cmd/lookupdist
fi
echo "| lookup | n | instructions | L1d misses | last-level misses | other (runtime) instructions |"
echo "|:--|--:|--:|--:|--:|--:|"
for kind in $kinds; do
	for l in $lo $hi; do
		# valgrind 3.19 does not know RDTSCP, which the Go runtime uses on
		# newer CPUs unless told not to.
		GOGC=off GODEBUG=cpu.rdtscp=off valgrind --tool=cachegrind --I1=32768,8,64 --D1=49152,12,64 \
			--LL=33554432,16,64 --cachegrind-out-file="$dir/out.$l" \
			"$dir/lookupdist" -one "$kind" -n "$N" -lookups $l -keylen "${KEYLEN:-0}" >/dev/null 2>"$dir/log.$l"
	done
	n=$N
	[ "${kind#*/}" = many ] && n=100M
	# Per function (fn=), sum Ir, D1mr+D1mw and DLmr+DLmw of both runs.
	awk -v kind="$kind" -v n="$n" -v d=$((hi - lo)) '
		FNR == 1 { run++ }
		/^fn=/ { fn = substr($0, 4); next }
		/^[0-9]/ { ir[fn, run] += $2; d1[fn, run] += $6 + $9; ll[fn, run] += $7 + $10; seen[fn] = 1 }
		END {
			for (f in seen) {
				x = (ir[f, 2] - ir[f, 1]) / d
				if (f !~ /^(github\.com\/|main\.one$)/) { back += x; continue }
				tir += x
				td1 += (d1[f, 2] - d1[f, 1]) / d
				tll += (ll[f, 2] - ll[f, 1]) / d
			}
			printf "| %s | %s | %.1f | %.2f | %.2f | %.1f |\n", kind, n, tir, td1, tll, back
		}' "$dir/out.$lo" "$dir/out.$hi"
	if [ -n "$CG_KEEP" ]; then cp "$dir/out.$lo" "$CG_KEEP/$(echo $kind | tr / -).$lo.out"; cp "$dir/out.$hi" "$CG_KEEP/$(echo $kind | tr / -).$hi.out"; fi
done
rm -rf "$dir"
