#!/usr/bin/env bash
# bench-workloads.sh: saber-hx's throughput on SABER's workloads against
# their COST yardstick, the handwritten single-threaded C loops of
# ../shared/anchors/workloads_cost.c (issue #15).
#
# Usage: build/bench-workloads.sh [-w cm1,cm2,...] [-r ROUNDS] [-d SECS] [-u SECS] [-c path/to/workloads_cost.c]
#
#   -w  workloads, comma-separated (default: cm1,cm2,sg1,sg2,lrb1,groupby,select)
#   -r  rounds per workload (default 3)
#   -d  seconds per run (default 4)
#   -u  saber-hx's warm-up seconds before each measured run (default 2; 0: none)
#   -c  the yardstick's source (default ../shared/anchors/workloads_cost.c)
#
# Builds saber-hx and the yardstick into $OUT. Per workload it first runs
# `saber-hx bench W --validate` once (every emitted window checked against
# the reference evaluator) and fails unless it reports validated; then for
# each round runs, one after the other so that drifts of the machine hit all
# four alike:
#   workloads_cost W --secs D            (C, one thread, no ingestion copy)
#   workloads_cost W --secs D --copy     (C, with the ingestion copy)
#   saber-hx bench W --workers 1 --warmup Us --duration Ds --json $SABER_FLAGS
#   saber-hx bench W --workers 2 (the same)
# (the C loop runs a warm-up pass over its bundle and faults its pane ring
# in before its timing; saber-hx's warm-up lets the windows' state grow to
# its working size: sg2's first 3600 s of event time fill 3600 panes of
# 8000 groups) and prints each round's four figures (M tuples/s) and the ratios of
# saber-hx to the C loop with the copy (the same work) and without it, then
# per workload and worker count the median ratio with its min-max spread;
# gc1/gc2 are the GC cycles of the two saber-hx runs' measured intervals
# (the issue asks for none).
# Fails on any run that exits non-zero, is interrupted or prints no figure.
#
# Environment: SABER_FLAGS (extra saber-hx bench flags, split on spaces),
# OUT (build/out), CC (cc).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

WORKLOADS=cm1,cm2,sg1,sg2,lrb1,groupby,select
ROUNDS=3
SECS=4
WARMUP=2
cost_src=../shared/anchors/workloads_cost.c
SABER_FLAGS=${SABER_FLAGS:-}
OUT=${OUT:-$root/build/out}
CC=${CC:-cc}

die() {
	echo "bench-workloads: $*" >&2
	exit 1
}

usage() {
	sed -n '6,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while getopts "w:r:d:u:c:h" opt; do
	case $opt in
	w) WORKLOADS=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	d) SECS=$OPTARG ;;
	u) WARMUP=$OPTARG ;;
	c) cost_src=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 0 ]] || usage

[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "-r $ROUNDS: want a positive integer"
[[ $SECS =~ ^[0-9]+([.][0-9]+)?$ ]] || die "-d $SECS: want a number of seconds"
[[ $WARMUP =~ ^[0-9]+([.][0-9]+)?$ ]] || die "-u $WARMUP: want a number of seconds"
[[ -f $cost_src ]] || die "$cost_src: no such file (the yardstick's source, -c)"
IFS=, read -r -a wls <<<"$WORKLOADS"
for w in "${wls[@]}"; do
	case $w in
	cm1 | cm2 | sg1 | sg2 | lrb1 | groupby | select) ;;
	*) die "workload $w: the C yardstick has cm1, cm2, sg1, sg2, lrb1, groupby and select" ;;
	esac
done

mkdir -p "$OUT"
echo "building saber-hx and $cost_src into $OUT" >&2
go build -o "$OUT/saber-hx" ./cmd/saber-hx
"$CC" -O3 -march=native -o "$OUT/workloads_cost" "$cost_src"

# field NAME LINE: the number of the JSON field "NAME": N in LINE (empty if
# absent); tolerant of spaces around the colon. The first occurrence: the
# summary's own, ahead of the per-query ones.
field() {
	printf '%s\n' "$2" | grep -o -E '"'"$1"'"[[:space:]]*:[[:space:]]*-?[0-9][0-9.eE+-]*' | head -n 1 | sed -E 's/.*:[[:space:]]*//'
}

last_line() {
	printf '%s\n' "$1" | awk 'NF { l = $0 } END { print l }'
}

log=$OUT/bench-workloads.log
: >"$log"

# cost_run W [--copy]: the C loop's tuples/s.
cost_run() {
	local out line tps
	out=$("$OUT/workloads_cost" "$@" --secs "$SECS" 2>>"$log") || die "workloads_cost $*: failed (see $log)"
	line=$(last_line "$out")
	tps=$(field tuples_per_s "$line")
	[[ -n $tps ]] || die "workloads_cost $*: no tuples_per_s in its last line: $line"
	echo "$tps"
}

# saber_run W WORKERS [flags]: the tuples/s of a run that finished, and
# the GC cycles of its measured interval.
saber_run() {
	local w=$1 n=$2 out line tps gc rc=0
	shift 2
	# shellcheck disable=SC2086 # SABER_FLAGS is a list of flags
	out=$("$OUT/saber-hx" bench "$w" --workers "$n" --json "$@" $SABER_FLAGS 2>>"$log") || rc=$?
	line=$(last_line "$out")
	if [[ $rc -ne 0 ]] || ! printf '%s\n' "$line" | grep -q '"interrupted":[[:space:]]*false'; then
		tail -n 5 "$log" >&2
		die "saber-hx bench $w --workers $n $*: failed or interrupted (exit $rc): $line"
	fi
	tps=$(field tuples_per_s "$line")
	[[ -n $tps ]] || die "saber-hx bench $w: no tuples_per_s in its last line: $line"
	gc=$(field gc_cycles "$line")
	printf '%s\n' "$line" >>"$log"
	echo "$tps ${gc:-?}"
}

# validate W: one run of saber-hx with every window checked.
validate() {
	local out line rc=0
	# shellcheck disable=SC2086
	out=$("$OUT/saber-hx" bench "$1" --workers 2 --validate --json $SABER_FLAGS 2>>"$log") || rc=$?
	line=$(last_line "$out")
	if [[ $rc -ne 0 ]] || ! printf '%s\n' "$line" | grep -q '"validated":[[:space:]]*true'; then
		tail -n 5 "$log" >&2
		die "saber-hx bench $1 --validate: failed or not validated (exit $rc): $line"
	fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
mtps() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 1e6 }'; }

# summary NAME RATIO...: the median and the min-max spread (over rounds, or
# UNIT's).
summary() {
	local name=$1
	shift
	printf '%s\n' "$@" | sort -g | awk -v name="$name" -v unit="${UNIT:-round(s)}" '
		{ r[NR] = $1 }
		END {
			med = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
			printf "  %-34s median %.3f, spread %.3f-%.3f over %d %s\n", name, med, r[1], r[NR], NR, unit
		}'
}

cpu=$(awk -F: '/^model name/ { sub(/^[ \t]+/, "", $2); print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "CPU: ${cpu:-unknown} ($(nproc) CPUs); rounds $ROUNDS of ${SECS}s (saber-hx after ${WARMUP}s of warm-up); SABER_FLAGS='$SABER_FLAGS'"
echo "figures in M tuples/s; ratios are saber-hx over the C loop (copy: with --copy)"
meds=()
for w in "${wls[@]}"; do
	validate "$w"
	echo "$w: validated against the reference evaluator"
	printf '  %-5s %9s %9s %9s %9s %9s %9s %9s %9s %6s\n' round C C-copy w1 w2 w1/copy w2/copy w1/C w2/C gc1/gc2
	a1=() a2=() b1=() b2=()
	for ((i = 1; i <= ROUNDS; i++)); do
		c=$(cost_run "$w")
		cc=$(cost_run "$w" --copy)
		read -r s1 g1 <<<"$(saber_run "$w" 1 --warmup "${WARMUP}s" --duration "${SECS}s")"
		read -r s2 g2 <<<"$(saber_run "$w" 2 --warmup "${WARMUP}s" --duration "${SECS}s")"
		a1+=("$(ratio "$s1" "$cc")") a2+=("$(ratio "$s2" "$cc")")
		b1+=("$(ratio "$s1" "$c")") b2+=("$(ratio "$s2" "$c")")
		printf '  %-5s %9s %9s %9s %9s %9s %9s %9s %9s %6s\n' "$i" "$(mtps "$c")" "$(mtps "$cc")" "$(mtps "$s1")" "$(mtps "$s2")" \
			"${a1[-1]}" "${a2[-1]}" "${b1[-1]}" "${b2[-1]}" "$g1/$g2"
	done
	summary "w1 / C --copy" "${a1[@]}"
	summary "w2 / C --copy" "${a2[@]}"
	summary "w1 / C" "${b1[@]}"
	summary "w2 / C" "${b2[@]}"
	meds+=("$(printf '%s\n' "${b2[@]}" | sort -g | awk '{ r[NR] = $1 } END { print NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2 }')")
done
UNIT=workloads summary "all: median of w2 / C medians" "${meds[@]}"
