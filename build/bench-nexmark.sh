#!/usr/bin/env bash
# bench-nexmark.sh: saber-hx on the Nexmark queries of examples/nexmark
# (issue #28), at 1 and 2 workers, and the table docs/nexmark.md keeps.
#
# Usage: build/bench-nexmark.sh [-q q0,q1,...] [-r ROUNDS] [-d SECS] [-u SECS] [-p SECS] [-R RATE] [-s nexmark|json|kafka] [-i] [-e EVENTS]
#
#   -q  queries, comma-separated (default: every query of examples/nexmark)
#   -r  rounds per query (default 3)
#   -d  seconds measured per run (default 5)
#   -u  warm-up seconds before each measured run (default 2)
#   -p  seconds measured at least for a query of processing-time windows
#       (PROCTIME(): q12's windows are 10 s of wall clock; default 20)
#   -R  events per second of event time, --rate (default 100000, the
#       Nexmark project's V2 tps, conf/nexmark_v2.yaml, which its
#       published figures ran; saber-hx nexmark's default is 10000)
#   -s  source: nexmark (a replayed bundle; the default), json (files
#       that `saber-hx nexmark generate` writes once into $OUT, read whole)
#       or kafka (topics of 4 partitions on a kafka-local broker on
#       loopback, started here and generated into once, read to their end)
#   -i  source nexmark: the generator in the loop (--inline), no bundle
#   -e  events: the bundle's, the JSON files' or the topics' (default 2097152)
#
# Per query it first runs `saber-hx nexmark Q --validate` (every query of
# the program checked against the reference evaluator over a prefix) and
# fails unless it reports validated; then per round one run at 1 worker
# and one at 2, one after the other so that drifts of the machine hit both
# alike, and prints each run's tuples/s (the records the sources read) and
# events/s (the sequence's events those records span: a query that does
# not read every table claims events never generated nor read;
# docs/nexmark.md, "What a run counts"); at the end per query the medians
# of M tuples/s at 1 and 2 workers, M events/s at 2, M tuples per
# CPU-second used at 2 (the process's CPU time, getrusage) and the CPUs
# used, the median of the rounds' 2/1 ratios (tuples/s) with its min-max
# spread, the largest serial fraction seen of one of the program's
# queries (its parts), and the largest of the whole program's (all its
# serial time against all its worker time: the bound of its speed-up).
# The CPU, the rate and the mode head the table: figures compare on one
# CPU, one rate and one mode.
#
# Environment: SABER_FLAGS (extra saber-hx nexmark flags, split on
# spaces), OUT (build/out).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

QUERIES=""
ROUNDS=3
SECS=5
WARMUP=2
PSECS=20
RATE=100000
INLINE=""
SOURCE=nexmark
EVENTS=2097152
SABER_FLAGS=${SABER_FLAGS:-}
OUT=${OUT:-$root/build/out}

die() {
	echo "bench-nexmark: $*" >&2
	exit 1
}

usage() {
	sed -n '5,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while getopts "q:r:d:u:p:R:s:ie:h" opt; do
	case $opt in
	q) QUERIES=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	d) SECS=$OPTARG ;;
	u) WARMUP=$OPTARG ;;
	p) PSECS=$OPTARG ;;
	R) RATE=$OPTARG ;;
	i) INLINE=--inline ;;
	s) SOURCE=$OPTARG ;;
	e) EVENTS=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 0 ]] || usage
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "-r $ROUNDS: want a positive integer"
[[ $SECS =~ ^[0-9]+([.][0-9]+)?$ ]] || die "-d $SECS: want a number of seconds"
[[ $WARMUP =~ ^[0-9]+([.][0-9]+)?$ ]] || die "-u $WARMUP: want a number of seconds"
[[ $PSECS =~ ^[0-9]+([.][0-9]+)?$ ]] || die "-p $PSECS: want a number of seconds"
[[ $RATE =~ ^[1-9][0-9]*$ ]] || die "-R $RATE: want a positive integer"
[[ $EVENTS =~ ^[1-9][0-9]*$ ]] || die "-e $EVENTS: want a positive integer"
[[ $SOURCE == nexmark || $SOURCE == json || $SOURCE == kafka ]] || die "-s $SOURCE: want nexmark, json or kafka"
[[ -z $INLINE || $SOURCE == nexmark ]] || die "-i: the nexmark source only"

mkdir -p "$OUT"
echo "building saber-hx into $OUT" >&2
go build -o "$OUT/saber-hx" ./cmd/saber-hx
if [[ -z $QUERIES ]]; then
	QUERIES=$(cd examples/nexmark && ls q*.sql | sed 's/\.sql$//' | sort -V | paste -sd, -)
fi
IFS=, read -r -a qs <<<"$QUERIES"

log=$OUT/bench-nexmark.log
: >"$log"
src=(--source "$SOURCE" ${INLINE:+"$INLINE"})
# The generator's and the measured interval's flags: files and topics are
# read to their end, at the rate they were generated with (saber-hx
# refuses a flag that would do nothing).
gen() { [[ $SOURCE != nexmark ]] || printf '%s\n' "$@"; }
# bundle N: --events N where a bundle is replayed (not --inline).
bundle() { [[ $SOURCE != nexmark || -n ${INLINE:-} ]] || printf '%s\n' --events "$1"; }
[[ $SOURCE != nexmark ]] || src+=(--rate "$RATE")
if [[ $SOURCE == json ]]; then
	dir=$OUT/nexmark-json-$EVENTS-$RATE
	if [[ ! -f $dir/bid.json ]]; then
		rm -rf "$dir"
		echo "generating $EVENTS events into $dir" >&2
		"$OUT/saber-hx" nexmark generate --events "$EVENTS" --rate "$RATE" --out "$dir" >>"$log" 2>&1 || die "nexmark generate failed (see $log)"
	fi
	src+=(--dir "$dir")
fi
if [[ $SOURCE == kafka ]]; then
	go build -o "$OUT/kafka-local" ./cmd/kafka-local
	broker=127.0.0.1:$((30000 + $$ % 10000))
	"$OUT/kafka-local" --addr "$broker" --partitions 4 >"$OUT/kafka-local.log" 2>&1 &
	kpid=$!
	trap 'kill "$kpid" 2>/dev/null || true; wait "$kpid" 2>/dev/null || true' EXIT
	sleep 1
	echo "generating $EVENTS events into the topics of $broker (4 partitions)" >&2
	"$OUT/saber-hx" nexmark generate --events "$EVENTS" --rate "$RATE" --brokers "$broker" >>"$log" 2>&1 || die "nexmark generate failed (see $log)"
	src+=(--brokers "$broker")
fi

field() {
	printf '%s\n' "$2" | grep -o -E '"'"$1"'"[[:space:]]*:[[:space:]]*-?[0-9][0-9.eE+-]*' | head -n 1 | sed -E 's/.*:[[:space:]]*//'
}

# run Q WORKERS [flags]: the last line (JSON) of a run that succeeded.
run() {
	local q=$1 n=$2 out line rc=0
	shift 2
	# shellcheck disable=SC2086 # SABER_FLAGS is a list of flags
	out=$("$OUT/saber-hx" nexmark "$q" --workers "$n" "${src[@]}" --json "$@" $SABER_FLAGS 2>>"$log") || rc=$?
	line=$(printf '%s\n' "$out" | awk 'NF { l = $0 } END { print l }')
	if [[ $rc -ne 0 ]] || ! printf '%s\n' "$line" | grep -q '"interrupted":[[:space:]]*false'; then
		tail -n 5 "$log" >&2
		die "saber-hx nexmark $q --workers $n $*: failed or interrupted (exit $rc): $line"
	fi
	printf '%s\n' "$line" >>"$log"
	echo "$line"
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
mode=$SOURCE
[[ $SOURCE != nexmark ]] || mode=${INLINE:+inline (the generator in the loop)}
[[ -n $mode ]] || mode="replayed bundle of $EVENTS events"
echo "CPU: $cpu; $(nproc) CPUs; source $SOURCE, $mode; rate $RATE events/s of event time; $ROUNDS rounds of ${SECS} s (${PSECS} s at least for processing-time windows) after ${WARMUP} s"
m() { awk -v x="$1" 'BEGIN { printf "%.2f", x / 1e6 }'; }
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
table=()
for q in "${qs[@]}"; do
	secs=$SECS
	if grep -q 'PROCTIME()' "examples/nexmark/$q.sql"; then
		# Windows of wall-clock time: a short run closes one or none.
		secs=$(awk -v a="$SECS" -v b="$PSECS" 'BEGIN { print (a > b ? a : b) }')
	fi
	# shellcheck disable=SC2046 # gen's flags, one word each
	line=$(run "$q" 2 --validate --rate "$RATE" $(gen --duration 1s --warmup 0s) $(bundle 100000))
	printf '%s\n' "$line" | grep -q '"validated":[[:space:]]*true' || die "nexmark $q: not validated: $line"
	one=() two=() ev=() percpu=() cpus=() ratios=() serial=0 program=0
	for r in $(seq "$ROUNDS"); do
		# shellcheck disable=SC2046 # gen's flags, one word each
		a=$(run "$q" 1 $(gen --duration "${secs}s" --warmup "${WARMUP}s") $(bundle "$EVENTS"))
		# shellcheck disable=SC2046
		b=$(run "$q" 2 $(gen --duration "${secs}s" --warmup "${WARMUP}s") $(bundle "$EVENTS"))
		ta=$(field tuples_per_s "$a") tb=$(field tuples_per_s "$b")
		one+=("$ta") two+=("$tb") ev+=("$(field events_per_s "$b")")
		percpu+=("$(field tuples_per_cpu_s "$b")") cpus+=("$(field cpus_used "$b")")
		ratios+=("$(awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.3f", b / a }')")
		serial=$(awk -v s="$serial" -v x="$(field largest_part_serial_fraction "$b")" 'BEGIN { print (x > s ? x : s) }')
		program=$(awk -v s="$program" -v x="$(field serial_fraction "$b")" 'BEGIN { print (x > s ? x : s) }')
		printf '%s round %d (%s s): %s M tuples/s at 1 worker, %s M at 2 (%s M events/s)\n' "$q" "$r" "$secs" "$(m "$ta")" "$(m "$tb")" "$(m "${ev[-1]}")"
	done
	lo=$(printf '%s\n' "${ratios[@]}" | sort -g | head -n 1) hi=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -n 1)
	table+=("$(printf '| %s | %s | %s | %s | %s | %.2f | %.2f (%s-%s) | %.3f | %.3f |' "$q" "$(m "$(med "${one[@]}")")" "$(m "$(med "${two[@]}")")" \
		"$(m "$(med "${ev[@]}")")" "$(m "$(med "${percpu[@]}")")" "$(med "${cpus[@]}")" "$(med "${ratios[@]}")" "$lo" "$hi" "$serial" "$program")")
done
echo
echo "| query | 1 worker (M tuples/s) | 2 workers (M tuples/s) | 2 workers (M events/s) | per CPU used at 2 (M tuples/CPU-s) | CPUs used at 2 | 2/1 (spread) | serial fraction (largest part) | serial fraction (program) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${table[@]}"
