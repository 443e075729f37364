#!/usr/bin/env bash
# bench-ysb.sh: saber-hx's YSB throughput against the COST yardstick, the
# handwritten single-threaded C loop (../shared/anchors/ysb_cost.c).
#
# Usage: build/bench-ysb.sh [path/to/ysb_cost.c]
#
# Builds saber-hx and the yardstick into $OUT, then for $PAIRS rounds runs,
# one after the other so that drifts of the machine hit all three alike:
#   ysb_cost --mb 16 --secs $SECS
#   saber-hx ysb --workers 1 --duration ${SECS}s --warmup ${WARMUP}s --json $SABER_FLAGS
#   saber-hx ysb --workers 2 (the same)
# and prints each round's three figures (tuples/s) and the ratios
# saber-hx/yardstick, then per worker count the median ratio over the
# rounds with its min-max spread. saber-hx's figure is of its measured
# interval, after the warm-up. Fails if any saber-hx run is not validated.
#
# Environment: PAIRS (3), SECS (10), WARMUP (3), SABER_FLAGS (extra
# saber-hx flags, split on spaces), OUT (build/out), CC (cc).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

cost_src=${1:-../shared/anchors/ysb_cost.c}
PAIRS=${PAIRS:-3}
SECS=${SECS:-10}
WARMUP=${WARMUP:-3}
SABER_FLAGS=${SABER_FLAGS:-}
OUT=${OUT:-$root/build/out}
CC=${CC:-cc}

die() {
	echo "bench-ysb: $*" >&2
	exit 1
}

[[ $PAIRS =~ ^[1-9][0-9]*$ ]] || die "PAIRS=$PAIRS: want a positive integer"
[[ -f $cost_src ]] || die "$cost_src: no such file (the yardstick's source, argument 1)"

mkdir -p "$OUT"
echo "building saber-hx and $cost_src into $OUT" >&2
go build -o "$OUT/saber-hx" ./cmd/saber-hx
"$CC" -O3 -march=native -o "$OUT/ysb_cost" "$cost_src"

# field NAME LINE: the number of the JSON field "NAME": N in LINE (empty if
# absent); tolerant of spaces around the colon.
field() {
	printf '%s\n' "$2" | sed -n -E 's/.*"'"$1"'"[[:space:]]*:[[:space:]]*(-?[0-9][0-9.eE+-]*).*/\1/p'
}

# last_line TEXT: the last non-empty line.
last_line() {
	printf '%s\n' "$1" | awk 'NF { l = $0 } END { print l }'
}

log=$OUT/bench-ysb.log
: >"$log"

cost_run() {
	local out line tps
	out=$("$OUT/ysb_cost" --mb 16 --secs "$SECS" 2>>"$log") || die "ysb_cost failed (see $log)"
	line=$(last_line "$out")
	tps=$(field tuples_per_s "$line")
	[[ -n $tps ]] || die "ysb_cost: no tuples_per_s in its last line: $line"
	echo "$tps"
}

# saber_run WORKERS: the measured tuples/s of a validated run.
saber_run() {
	local out line tps rc=0
	# shellcheck disable=SC2086 # SABER_FLAGS is a list of flags
	out=$("$OUT/saber-hx" ysb --workers "$1" --duration "${SECS}s" --warmup "${WARMUP}s" --json $SABER_FLAGS 2>>"$log") || rc=$?
	line=$(last_line "$out")
	if [[ $rc -ne 0 ]] || ! printf '%s\n' "$line" | grep -q '"validated":[[:space:]]*true'; then
		tail -n 5 "$log" >&2
		die "saber-hx ysb --workers $1: failed or not validated (exit $rc): $line"
	fi
	tps=$(field tuples_per_s "$line")
	[[ -n $tps ]] || die "saber-hx: no tuples_per_s in its last line: $line"
	echo "$tps"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# summary NAME RATIO...: the median and the min-max spread.
summary() {
	local name=$1
	shift
	printf '%s\n' "$@" | sort -g | awk -v name="$name" '
		{ r[NR] = $1 }
		END {
			med = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
			printf "%s: median ratio %.3f over %d round(s), spread %.3f-%.3f\n", name, med, NR, r[1], r[NR]
		}'
}

echo "PAIRS=$PAIRS SECS=$SECS WARMUP=$WARMUP SABER_FLAGS='$SABER_FLAGS' ($(nproc) CPUs)"
printf '%-6s %16s %16s %16s %10s %10s\n' round "cost tuples/s" "saber w1" "saber w2" "w1/cost" "w2/cost"
r1=() r2=()
for ((i = 1; i <= PAIRS; i++)); do
	c=$(cost_run)
	s1=$(saber_run 1)
	s2=$(saber_run 2)
	q1=$(ratio "$s1" "$c")
	q2=$(ratio "$s2" "$c")
	r1+=("$q1")
	r2+=("$q2")
	printf '%-6s %16.0f %16.0f %16.0f %10s %10s\n' "$i" "$c" "$s1" "$s2" "$q1" "$q2"
done
summary "saber-hx --workers 1 / ysb_cost" "${r1[@]}"
summary "saber-hx --workers 2 / ysb_cost" "${r2[@]}"
