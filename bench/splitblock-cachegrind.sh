#!/bin/sh
# Instructions per op of BenchmarkSplitBlock's variants (bloom.SplitBlock
# against parquet-go's split-block filter), from valgrind's cachegrind: a
# count that the machine's load does not change, where ns/op on a shared
# machine does. Each variant runs N ops on filters of 100,000 keys; a run
# with no variant measures the set-up, which is subtracted. Counted are the
# two libraries' functions (filters and hashes) and the benchmark's loops;
# not the Go runtime's background work, nor clearing the add benchmarks'
# filters after every n keys.
#
# Usage: cd bench && ./splitblock-cachegrind.sh [variant ...]
# variants: key/add/bloomkit key/hit/parquet-go hash/miss/bloomkit ... (the
# sub-benchmark names of BenchmarkSplitBlock); all of them by default.
set -e
N=200000
dir=$(mktemp -d)
go test -tags parquet -c -o "$dir/bench.test" .
variants=${*:-key/add/bloomkit key/add/parquet-go key/hit/bloomkit key/hit/parquet-go key/miss/bloomkit key/miss/parquet-go hash/add/bloomkit hash/add/parquet-go hash/hit/bloomkit hash/hit/parquet-go hash/miss/bloomkit hash/miss/parquet-go many/add/bloomkit many/add/parquet-go many/hit/bloomkit many/miss/bloomkit}
sum() {
	cg_annotate --auto=no "$1" 2>/dev/null |
		grep -E 'bloomkit/bloom\.|parquet-go/bloom|xxhash|BenchmarkSplitBlock\.func|hashLoop|bench\.loop' |
		grep -v -E 'Reset|memclr|FalsePositive|Estimate|New' |
		awk '{gsub(",", "", $1); s += $1} END {print s + 0}'
}
run() { # name benchtime out
	valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$3" "$dir/bench.test" \
		-test.run '^$' -test.bench "SplitBlock/$1\$" -test.benchtime "$2x" -n 100000 >/dev/null 2>&1
}
run none 1 "$dir/base"
base=$(sum "$dir/base")
echo "| variant | instructions per op |"
echo "|---|---:|"
for v in $variants; do
	out="$dir/$(echo "$v" | tr / _)"
	run "$v" $N "$out"
	echo "| $v | $((($(sum "$out") - base) / N)) |"
done
rm -r "$dir"
