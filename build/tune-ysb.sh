#!/usr/bin/env bash
# tune-ysb.sh: compares saber-hx ysb configurations in alternating runs, the
# way the defaults of docs/performance.md were chosen.
#
# Usage: build/tune-ysb.sh 'FLAGS A' 'FLAGS B' ...
#   e.g. build/tune-ysb.sh '--workers 2' '--workers 2 --buffer-size 4194304'
#
# Builds saber-hx into $OUT, then for $ROUNDS rounds runs every
# configuration once, in the order given (A B C A B C ...), so that drifts
# of the machine hit them alike. Prints each round's tuples/s and, per
# configuration, the median over the rounds, its min-max spread, and the
# median of its per-round ratio to the first configuration. Every run must
# be validated (the windows are checked while measured).
#
# Environment: ROUNDS (3), SECS (5), WARMUP (2), OUT (build/out).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
WARMUP=${WARMUP:-2}
OUT=${OUT:-$root/build/out}

die() {
	echo "tune-ysb: $*" >&2
	exit 1
}

[[ $# -ge 1 ]] || die "usage: build/tune-ysb.sh 'FLAGS A' ['FLAGS B' ...]"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS=$ROUNDS: want a positive integer"

mkdir -p "$OUT"
go build -o "$OUT/saber-hx" ./cmd/saber-hx
log=$OUT/tune-ysb.log
: >"$log"

run() {
	local out line rc=0
	# shellcheck disable=SC2086 # $1 is a list of flags
	out=$("$OUT/saber-hx" ysb --duration "${SECS}s" --warmup "${WARMUP}s" --json $1 2>>"$log") || rc=$?
	line=$(printf '%s\n' "$out" | awk 'NF { l = $0 } END { print l }')
	if [[ $rc -ne 0 ]] || ! printf '%s\n' "$line" | grep -q '"validated":[[:space:]]*true'; then
		die "saber-hx ysb $1: failed or not validated (exit $rc): $line"
	fi
	printf '%s\n' "$line" | sed -n -E 's/.*"tuples_per_s"[[:space:]]*:[[:space:]]*([0-9.eE+-]+).*/\1/p'
}

median() {
	sort -g | awk '{ r[NR] = $1 } END { m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2; printf "%.3f %.3f %.3f", m, r[1], r[NR] }'
}

declare -A tps ratio
echo "ROUNDS=$ROUNDS SECS=$SECS WARMUP=$WARMUP ($(nproc) CPUs)"
for ((r = 1; r <= ROUNDS; r++)); do
	base=
	for ((c = 1; c <= $#; c++)); do
		flags=${!c}
		t=$(run "$flags")
		[[ -n $base ]] || base=$t
		tps[$c]+="$t "
		ratio[$c]+="$(awk -v a="$t" -v b="$base" 'BEGIN { printf "%.4f", a / b }') "
		printf 'round %d  %-60s %8.2f M tuples/s\n' "$r" "$flags" "$(awk -v t="$t" 'BEGIN { print t / 1e6 }')"
	done
done
echo
printf '%-60s %10s %17s %16s\n' configuration "median M/s" "spread M/s" "ratio to first"
for ((c = 1; c <= $#; c++)); do
	read -r m lo hi <<<"$(printf '%s\n' ${tps[$c]} | median)"
	read -r q qlo qhi <<<"$(printf '%s\n' ${ratio[$c]} | median)"
	printf '%-60s %10.2f %8.2f-%-8.2f %6.3f (%.3f-%.3f)\n' "${!c}" "$(awk -v x="$m" 'BEGIN{print x/1e6}')" \
		"$(awk -v x="$lo" 'BEGIN{print x/1e6}')" "$(awk -v x="$hi" 'BEGIN{print x/1e6}')" "$q" "$qlo" "$qhi"
done
