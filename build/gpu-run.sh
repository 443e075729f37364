#!/usr/bin/env bash
# run.sh: saber-hx's CUDA checks, then its GPU measurements, on a GPU
# machine without Go (build/gpu-bundle.sh copies this file, build/gpu-run.sh,
# into the bundle as run.sh, next to saber-hx, collect and tests/).
#
#   run.sh            the CUDA tests, then the measurements
#   run.sh --quick    the measurements only (a rerun)
#   run.sh --full     also, last, every test of the cuda test binaries
#   run.sh --dry-run  print every step and its time limit; run nothing
#
# Everything lands in $OUT (default: ./out next to this file): run.log
# (every command's output), results.json (every step and figure; rewritten
# after a step once COLLECT_EVERY seconds, default 5, have passed since
# the last time, and at the end, so that it is whole whenever the run
# stops), summary.txt (the table printed last), nvidia-smi.txt (nvidia-smi
# -q: driver, clocks, PCIe link) and logs.tar.gz (one log per step). Five
# files, none in a subfolder: the device tool brings back at most 8.
#
# Every step runs under `timeout`, every Go test binary with -test.timeout
# a little under it; a step that fails or times out is reported and the
# next one runs; the whole run stops starting steps once RUN_BUDGET_S
# (default 480 s) is spent, and records those it skipped. The exit status
# is 0 when every step that ran passed and every test step ran, else 1
# (2: bad arguments).
#
# Knobs (environment): RUN_BUDGET_S, SECS (measured seconds per saber-hx
# run, default 1.5), REPS (repetitions, default 3), SIZES (task sizes in
# bytes, default "1048576 262144 4194304": 1 MiB first, so that a budget cut
# loses the others), WORKLOADS (default "ysb select proj"), MODES (default
# "cpu gpu hybrid"), T_TEST (seconds per test binary, default 120),
# T_SHORT (default 30), T_RUN (per saber-hx run, default SECS + 15; after
# three runs in a row time out, SECS + 6 for the rest, so that a hanging
# GPU does not eat the budget), SCALING (the workloads of the CPU scaling
# curve, run after the first task size's matrix, cpu mode, one run per
# worker count; default "ysb sg2 lrb1 join nexmark-q5 nexmark-q7
# nexmark-q8 nexmark-q0 nexmark-q3 nexmark-q13 nexmark-q20", the later
# Nexmark queries last, so that a budget cut loses them first; empty:
# none), SCALING_WORKERS (default "1 2 4 8 15"; a count
# above the CPUs becomes their number; after the curve, with more than
# two CPUs and SCALING not empty, group cpuvariant: pinned against
# unpinned at 3/4 of NCPU workers and shared against the workers' ingestion
# at 2 and 4), NCPU (default: nproc), COLLECT_EVERY (default 5),
# PIPELINE_PARTS (group pipeline, before the scaling curve: issue #26's
# Kafka YSB pipeline, build/bench-pipeline.sh's backlog, through the
# bundle's kafka-local and Redis; partitions of the topic, default 4; 0:
# none), PIPELINE_RATE and PIPELINE_PRODUCE (the backlog: events/s for
# that long, default 1000000 for 5s), PIPELINE_FETCHERS (default "1 2 4",
# each count capped at the partitions), PIPELINE_REPS (default 2: rounds,
# each the baseline build saber-hx-base, then this build at each count).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here" || exit 2

usage() { sed -n '2,49p' "$here/$(basename "$0")" | sed 's/^# \{0,1\}//'; }

quick=0 full=0 dry=0
for a in "$@"; do
	case $a in
	--quick) quick=1 ;;
	--full) full=1 ;;
	--dry-run) dry=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		echo "run.sh: unknown argument $a (run.sh --help)" >&2
		exit 2
		;;
	esac
done

OUT=${OUT:-$here/out}
BUDGET=${RUN_BUDGET_S:-480}
SECS=${SECS:-1.5}
REPS=${REPS:-3}
SIZES=${SIZES:-"1048576 262144 4194304"}
WORKLOADS=${WORKLOADS:-"ysb select proj"}
MODES=${MODES:-"cpu gpu hybrid"}
T_TEST=${T_TEST:-120}
T_SHORT=${T_SHORT:-30}
secs_int=${SECS%%.*}
T_RUN=${T_RUN:-$((${secs_int:-1} + 15))}
SCALING=${SCALING-"ysb sg2 lrb1 join nexmark-q5 nexmark-q7 nexmark-q8 nexmark-q0 nexmark-q3 nexmark-q13 nexmark-q20"}
SCALING_WORKERS=${SCALING_WORKERS:-"1 2 4 8 15"}
NCPU=${NCPU:-$(nproc 2>/dev/null || echo 1)}
COLLECT_EVERY=${COLLECT_EVERY:-5}
PIPELINE_PARTS=${PIPELINE_PARTS:-4}
PIPELINE_RATE=${PIPELINE_RATE:-1000000}
PIPELINE_PRODUCE=${PIPELINE_PRODUCE:-5s}
PIPELINE_FETCHERS=${PIPELINE_FETCHERS:-"1 2 4"}
PIPELINE_REPS=${PIPELINE_REPS:-2}
HYBRID_WORKERS=$((NCPU > 1 ? NCPU - 1 : 1))

# gpu-bundle.sh gzips the binaries to fit the device tool's carry limit:
# unpack them where they lie, once (a rerun finds them unpacked).
if [ "$dry" -eq 0 ]; then
	while IFS= read -r -d '' gz; do
		gunzip -f "$gz" || {
			echo "run.sh: cannot unpack $gz" >&2
			exit 2
		}
	done < <(find . -type f \( -name '*.test.gz' -o -path ./saber-hx.gz -o -path ./collect.gz -o -path ./kafka-local.gz -o -path ./kafka-ceiling.gz -o -path ./saber-hx-base.gz -o -path './redis/*.gz' \) -print0)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/saber-gpu-run.XXXXXX") || exit 2
mkdir -p "$work/logs"
: >"$work/steps.tsv"
: >"$work/runs.tsv"
if [ "$dry" -eq 1 ]; then
	OUT=$work/out # nothing of a dry run lands in $OUT
fi
mkdir -p "$OUT" || exit 2
rm -f "$OUT/results.json" "$OUT/summary.txt" "$OUT/logs.tar.gz" "$OUT/nvidia-smi.txt"
: >"$OUT/run.log"
start=$SECONDS
failed_any=0

log() { echo "$*" | tee -a "$OUT/run.log"; }

{
	printf 'started\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf 'budget_s\t%s\n' "$BUDGET"
	printf 'quick\t%s\n' "$quick"
	printf 'secs\t%s\n' "$SECS"
	printf 'reps\t%s\n' "$REPS"
	printf 'nproc\t%s\n' "$NCPU"
	printf 'hybrid_workers\t%s\n' "$HYBRID_WORKERS"
	printf 'uname\t%s\n' "$(uname -srm)"
	printf 'bundle\t%s\n' "$(cat "$here/VERSION" 2>/dev/null || echo unknown)"
	printf 'gpu_sync\t%s\n' "${SABER_HX_GPU_SYNC:-default}"
} >"$work/meta.tsv"

# collect rewrites results.json and summary.txt, and logs.tar.gz. It reads
# every log so far, so after each of a hundred short steps it would cost
# more than they do; step calls it once COLLECT_EVERY seconds have passed.
collected=$SECONDS
collect() {
	collected=$SECONDS
	if [ -x ./collect ]; then
		./collect results "$work" "$OUT" >"$work/table.txt" 2>>"$OUT/run.log" || echo "run.sh: collect failed (see run.log)" >>"$OUT/run.log"
	fi
	tar -czf "$OUT/logs.tar.gz.tmp" -C "$work" logs steps.tsv runs.tsv meta.tsv 2>/dev/null && mv "$OUT/logs.tar.gz.tmp" "$OUT/logs.tar.gz"
}

# step NAME KIND LIMIT CMD...: runs CMD under timeout with its output in
# logs/NAME.log and run.log, and records it in steps.tsv. KIND is env, test
# or measure. Go test binaries get -test.timeout from the caller (tlimit).
step() {
	local name=$1 kind=$2 limit=$3
	shift 3
	local rem
	rem=$((BUDGET - (SECONDS - start))) # the budget's seconds left
	if [ "$dry" -eq 1 ]; then
		printf '%-34s %-8s %4ss  %s\n' "$name" "$kind" "$limit" "$*"
		return 0
	fi
	if [ "$rem" -lt 10 ]; then
		printf '%s\t%s\tskipped\t-1\t0\t\t%s\n' "$name" "$kind" "$*" >>"$work/steps.tsv"
		echo "--- skipped $name: the run's budget of ${BUDGET}s is spent" >>"$OUT/run.log"
		[ "$kind" = test ] && echo "skipped  $name (the budget of ${BUDGET}s is spent)"
		[ "$kind" = test ] && failed_any=1
		return 1
	fi
	if [ "$limit" -gt $((rem - 5)) ]; then
		limit=$((rem - 5))
	fi
	local lf="logs/$name.log" t0=$SECONDS rc st
	{
		echo "=== $name (limit ${limit}s): $*"
	} >>"$OUT/run.log"
	timeout -k 5 "$limit" "$@" >"$work/$lf" 2>&1
	rc=$?
	cat "$work/$lf" >>"$OUT/run.log"
	case $rc in
	0) st=pass ;;
	124 | 137) st=timeout ;;
	*) st=fail ;;
	esac
	local dt=$((SECONDS - t0))
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$kind" "$st" "$rc" "$dt" "$lf" "$*" >>"$work/steps.tsv"
	echo "=== $name: $st (exit $rc, ${dt}s)" >>"$OUT/run.log"
	printf '%-8s %-40s %4ss\n' "$st" "$name" "$dt"
	last_status=$st
	if [ "$st" != pass ]; then
		failed_any=1
		tail -n 15 "$work/$lf" | sed 's/^/    | /'
	fi
	[ $((SECONDS - collected)) -ge "$COLLECT_EVERY" ] && collect
	[ "$st" = pass ]
}

# tlimit LIMIT: -test.timeout for a test binary run under LIMIT seconds.
tlimit() { echo "-test.timeout=$(($1 > 20 ? $1 - 10 : $1))s"; }

# gotest NAME PKGDIR LIMIT ARGS...: a test binary from its own folder.
gotest() {
	local name=$1 dir=$2 limit=$3
	shift 3
	local bin
	bin="tests/$dir/$(basename "$dir").test"
	if [ ! -x "$bin" ] && [ "$dry" -eq 0 ]; then
		printf '%s\ttest\tfail\t127\t0\t\t%s\n' "$name" "$bin" >>"$work/steps.tsv"
		log "--- fail $name: $bin is missing from the bundle"
		failed_any=1
		return 1
	fi
	step "$name" test "$limit" bash -c 'cd "$1" && shift && exec "$@"' _ "tests/$dir" "./$(basename "$dir").test" -test.v "$(tlimit "$limit")" "$@"
}

# record_run NAME GROUP WORKLOAD MODE TASK POLICY STATIC REP EXTRA: a
# run's line of runs.tsv (gpucollect's columns).
record_run() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$work/runs.tsv"; }

# sbx NAME GROUP WORKLOAD MODE TASK POLICY STATIC REP EXTRA ARGS...: one
# saber-hx run of the measurements, recorded in runs.tsv.
nrun=0 timeouts_in_a_row=0 last_status=
sbx() {
	local name=$1 group=$2 w=$3 mode=$4 ts=$5 pol=$6 static=$7 rep=$8 extra=$9
	shift 9
	local buf=$((32 * ts))
	[ "$buf" -lt $((4 << 20)) ] && buf=$((4 << 20))
	local args=()
	case $w in
	ysb) args=(ysb --warmup 0.5s) ;;
	nexmark-*) args=(nexmark "${w#nexmark-}" --warmup 0.5s) ;;
	select) args=(bench select --predicates 256) ;;
	proj) args=(bench proj --attributes 16 --expr-depth 8) ;;
	*) args=(bench "$w") ;;
	esac
	args+=(--mode "$mode" --duration "${SECS}s" --json)
	# Task size 0: the command's own (Nexmark's depends on its tuples).
	# Hybrid mode runs on the engine's ring for it (32 tasks per worker,
	# up to 512 MiB: a GPU task's round trip holds up the CPU's results).
	[ "$ts" -gt 0 ] && args+=(--task-size "$ts")
	[ "$ts" -gt 0 ] && [ "$mode" != hybrid ] && args+=(--buffer-size "$buf")
	[ "$mode" = hybrid ] && args+=(--workers "$HYBRID_WORKERS" --policy "$pol")
	[ -n "$static" ] && args+=(--static "$static")
	args+=("$@")
	local envs=()
	case $extra in
	--*) read -r -a more <<<"$extra" && args+=("${more[@]}") ;; # more flags
	*=*) envs=(env "$extra") ;;                                 # an environment variable for saber-hx
	esac
	nrun=$((nrun + 1))
	local limit=$T_RUN
	if [ "$timeouts_in_a_row" -ge 3 ] && [ "$limit" -gt $((${secs_int:-1} + 6)) ]; then
		limit=$((${secs_int:-1} + 6))
	fi
	record_run "$name" "$group" "$w" "$mode" "$ts" "$pol" "$static" "$rep" "$extra"
	last_status=
	step "$name" measure "$limit" "${envs[@]}" ./saber-hx "${args[@]}"
	local rc=$?
	if [ "$last_status" = timeout ]; then
		timeouts_in_a_row=$((timeouts_in_a_row + 1))
	elif [ -n "$last_status" ]; then
		timeouts_in_a_row=0
	fi
	return $rc
}

log "run.sh: $(date -u +%H:%M:%S) budget ${BUDGET}s, SECS=$SECS REPS=$REPS, $NCPU CPUs (hybrid: $HYBRID_WORKERS workers), OUT=$OUT"
[ "$dry" -eq 1 ] && printf '%-34s %-8s %5s  %s\n' step kind limit command

# --- the machine
# The cuda binaries link libcuda.so.1 (the driver's): where the loader does
# not find it, look in the usual driver folders before giving up.
if [ "$dry" -eq 0 ] && [ -x ./saber-hx ] && ldd ./saber-hx 2>/dev/null | grep -q 'libcuda.so.1 => not found'; then
	for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/lib64/stubs/..; do
		if [ -e "$d/libcuda.so.1" ]; then
			export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
			log "run.sh: libcuda.so.1 found in $d (LD_LIBRARY_PATH)"
			break
		fi
	done
fi
if [ "$dry" -eq 0 ] && ! command -v nvidia-smi >/dev/null; then
	for d in /usr/local/nvidia/bin /usr/bin /usr/local/bin; do
		[ -x "$d/nvidia-smi" ] && export PATH="$PATH:$d" && break
	done
fi
printf 'ld_library_path\t%s\n' "${LD_LIBRARY_PATH:-}" >>"$work/meta.tsv"
if [ "$dry" -eq 0 ]; then
	if command -v nvidia-smi >/dev/null; then
		timeout 30 nvidia-smi -q >"$OUT/nvidia-smi.txt" 2>&1
		timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.sm,clocks.max.sm,persistence_mode,compute_mode \
			--format=csv,noheader 2>/dev/null | head -n 1 | tr -d '\r' >"$work/gpu.csv"
		IFS=',' read -r -a gf <"$work/gpu.csv"
		keys=(name driver_version memory_total pcie_gen_current pcie_gen_max pcie_width_current pcie_width_max clocks_sm clocks_max_sm persistence_mode compute_mode)
		for i in "${!keys[@]}"; do
			v=${gf[$i]:-}
			printf '%s\t%s\n' "${keys[$i]}" "$(echo "$v" | sed 's/^ *//;s/ *$//')"
		done >"$work/gpu.tsv"
	else
		echo "nvidia-smi: not found" >"$OUT/nvidia-smi.txt"
	fi
fi
step nvidia-smi env "$T_SHORT" nvidia-smi
step loader env "$T_SHORT" bash -c 'ldd ./saber-hx | grep -E "libcuda|not found"; ! ldd ./saber-hx | grep -q "not found"'
step topology env "$T_SHORT" ./saber-hx topology

# --- the CUDA tests: device, kernels against the emulator word for word
# (poisoned buffers), the engine and the command line on GPU 0
if [ "$quick" -eq 0 ]; then
	gotest test-gpu-device gpu/internal/device "$T_SHORT" -test.run .
	gotest test-gpu-cuda gpu "$T_TEST" -test.run '^TestCUDA' -test.skip '^TestCUDACopyBandwidth$'
	gotest test-engine-cuda engine "$T_TEST" -test.run '^TestCUDA'
	gotest test-cmd-cuda cmd/saber-hx "$T_TEST" -test.run '^TestCUDA'
fi

# --- the measurements
gotest bandwidth gpu 60 -test.run '^TestCUDACopyBandwidth$'

names_of() { # the query names of a warm-up's summary, or the workload
	local n
	n=$(./collect names "$work/logs/$1.log" 2>/dev/null | cut -d, -f1)
	echo "${n:-$2}"
}

# scaling: the CPU scaling curve, throughput against workers (SABER's
# figure), cpu mode at each command's default task and ring sizes; run
# once the first task size's matrix is measured, so that a
# budget cut loses the other sizes first.
scaling() {
	local counts=() n w c
	for n in $SCALING_WORKERS; do
		[ "$n" -gt "$NCPU" ] && n=$NCPU
		case " ${counts[*]} " in *" $n "*) ;; *) counts+=("$n") ;; esac
	done
	for w in $SCALING; do
		# bench warms up as ysb and nexmark do (sbx); task and ring
		# sizes are each command's defaults (task size 0: the ring grows
		# with the workers).
		local warm=" --warmup 0.5s"
		case $w in
		ysb | nexmark-*) warm= ;;
		esac
		for c in "${counts[@]}"; do
			sbx "scaling-$w-w$c" scaling "$w" cpu 0 hls "" 1 "--workers $c$warm"
		done
	done
}

# cpuvariants: what the 16-core curves left open (docs/performance.md,
# "Sixteen cores"): pinned against unpinned workers at three quarters of
# the CPUs (--pin auto pins up to half of them: pinned won at 4 and 8 of
# 16, lost at 15) for ysb, sg2 and the join; and YSB's ingestion shared
# against the workers' at 2 and 4 workers (--ingest auto: workers). cpu
# mode, each command's sizes, two rounds.
cpuvariants() {
	[ "$NCPU" -gt 2 ] && [ -n "$SCALING" ] || return 0
	local c3=$((3 * NCPU / 4)) rep w c warm pin
	for rep in 1 2; do
		for w in ysb sg2 join; do
			warm=
			[ "$w" = ysb ] || warm=" --warmup 0.5s"
			for pin in true false; do
				sbx "pin-$w-w$c3-$pin-$rep" cpuvariant "$w" cpu 0 hls "" "$rep" "--workers $c3 --pin $pin$warm"
			done
		done
		for c in 2 4; do
			sbx "ingest-ysb-w$c-shared-$rep" cpuvariant ysb cpu 0 hls "" "$rep" "--workers $c --ingest shared"
			sbx "ingest-ysb-w$c-workers-$rep" cpuvariant ysb cpu 0 hls "" "$rep" "--workers $c --ingest workers"
		done
	done
}

# pipeline: issue #26's Kafka YSB pipeline on this machine's cores, as
# build/bench-pipeline.sh's backlog runs it: kafka-local (in-memory broker,
# its own process, loopback) and Redis; `ysb produce` writes a backlog of
# JSON events, then each round reads it all with `ysb --source kafka
# --stop-at-end` (fetch, JSON decoding, the query, the windows to Redis):
# the build #26 was filed on (saber-hx-base) first, then this one at each
# number of fetchers; `ysb check` then checks the windows this build wrote;
# last, kafka-ceiling reads the backlog with franz-go alone, decoding
# nothing, with 1 client and one per partition: what the broker and the
# consumer allow on these cores.
# Left out, saying why, where the bundle has no broker, baseline or Redis.
# It runs once the first task size's matrix is measured, before the
# scaling curve: the two figures #26 asks of many cores come before what
# a cut of the budget may lose.
pipe_pids=()
pipeline_stop() {
	[ "${#pipe_pids[@]}" -gt 0 ] || return 0
	kill "${pipe_pids[@]}" 2>/dev/null
	wait "${pipe_pids[@]}" 2>/dev/null
	pipe_pids=()
}
pipeline() {
	[ "$PIPELINE_PARTS" -gt 0 ] || return 0
	local redis_cmd=() loader
	if [ -e redis/redis-server ]; then
		loader=$(find redis/lib -maxdepth 1 -name 'ld-linux*' | head -n 1)
		[ -n "$loader" ] && redis_cmd=("$here/$loader" --library-path "$here/redis/lib" "$here/redis/redis-server")
	elif command -v redis-server >/dev/null; then
		redis_cmd=(redis-server)
	fi
	if [ "$dry" -eq 0 ] && { [ ! -x ./kafka-local ] || [ ! -x ./saber-hx-base ] || [ "${#redis_cmd[@]}" -eq 0 ]; }; then
		log "--- no pipeline: the bundle lacks kafka-local, saber-hx-base or a Redis server (gpu-bundle.sh with PIPELINE_BASE=none?)"
		return 0
	fi
	local port=$((20000 + $$ % 10000)) # below the ephemeral range
	local redis=127.0.0.1:$port kafka=127.0.0.1:$((port + 1)) events=$work/pipeline-events.log
	if [ "$dry" -eq 0 ]; then
		"${redis_cmd[@]}" --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$work/logs/pipeline-redis.log" 2>&1 &
		pipe_pids+=($!)
		./kafka-local --addr "$kafka" --partitions "$PIPELINE_PARTS" >"$work/logs/pipeline-kafka.log" 2>&1 &
		pipe_pids+=($!)
		sleep 1
	fi
	step pipeline-setup env "$T_SHORT" ./saber-hx ysb setup --redis "$redis" --campaigns-out "$work/campaigns.csv" &&
		step pipeline-produce env 60 ./saber-hx ysb produce --brokers "$kafka" --topic ad-events --rate "$PIPELINE_RATE" \
			--duration "$PIPELINE_PRODUCE" --partitions "$PIPELINE_PARTS" --log "$events" || {
		pipeline_stop
		return 0
	}
	local counts=() f rep base
	for f in $PIPELINE_FETCHERS; do
		[ "$f" -gt "$PIPELINE_PARTS" ] && f=$PIPELINE_PARTS
		case " ${counts[*]} " in *" $f "*) ;; *) counts+=("$f") ;; esac
	done
	base=$(cut -d' ' -f1 BASE 2>/dev/null || echo base)
	local read=(ysb --source kafka --brokers "$kafka" --topic ad-events --redis "$redis" --stop-at-end --json)
	# pipe_run NAME WORKLOAD REP EXTRA CMD...: a run of the group.
	pipe_run() {
		local name=$1 w=$2 rep=$3 extra=$4
		shift 4
		record_run "$name" pipeline "$w" cpu 0 "" "" "$rep" "$extra"
		step "$name" measure "$T_RUN" "$@"
	}
	for rep in $(seq 1 "$PIPELINE_REPS"); do
		pipe_run "pipeline-base-$rep" ysb-kafka "$rep" "base $base" ./saber-hx-base "${read[@]}"
		for f in "${counts[@]}"; do
			pipe_run "pipeline-f$f-$rep" ysb-kafka "$rep" "--fetchers $f" ./saber-hx "${read[@]}" --fetchers "$f"
		done
	done
	step pipeline-check check "$T_SHORT" ./saber-hx ysb check --redis "$redis" --events "$events"
	if [ -x ./kafka-ceiling ] || [ "$dry" -eq 1 ]; then
		for f in $(printf '%s\n' 1 "$PIPELINE_PARTS" | sort -un); do
			pipe_run "pipeline-ceiling-c$f" kafka-ceiling 1 "--clients $f" ./kafka-ceiling --brokers "$kafka" --topic ad-events --clients "$f" --json
		done
	fi
	pipeline_stop
}
trap pipeline_stop EXIT

first_size=${SIZES%% *}
declare -A qname
for w in $WORKLOADS; do
	sbx "warmup-$w" warmup "$w" gpu "$first_size" hls "" 0 ""
	qname[$w]=$(names_of "warmup-$w" "$w")
done
for ts in $SIZES; do
	for w in $WORKLOADS; do
		for rep in $(seq 1 "$REPS"); do
			for mode in $MODES; do
				sbx "$w-$mode-$ts-$rep" matrix "$w" "$mode" "$ts" hls "" "$rep" ""
			done
		done
		if [ "$ts" = "$first_size" ]; then
			for rep in $(seq 1 "$REPS"); do
				for kind in cpu gpu; do
					sbx "$w-static-$kind-$ts-$rep" static "$w" hybrid "$ts" static "${qname[$w]:-$w}=$kind" "$rep" ""
				done
			done
		fi
	done
	if [ "$ts" = "$first_size" ]; then
		pipeline
		scaling
		cpuvariants
	fi
done
# The GPU's wait: spinning against blocking synchronisation, gpu mode.
for w in $WORKLOADS; do
	for rep in $(seq 1 "$REPS"); do
		sbx "$w-gpu-spin-$first_size-$rep" sync "$w" gpu "$first_size" hls "" "$rep" SABER_HX_GPU_SYNC=spin
	done
done
# Variants, gpu mode: a selection evaluating WHERE twice (the kernel before
# the flags); YSB's tasks through the staging copy (rings not registered).
for w in $WORKLOADS; do
	case $w in
	select) v=SABER_HX_GPU_SEL=twopass ;;
	ysb) v=SABER_HX_GPU_REGISTER=0 ;;
	*) continue ;;
	esac
	for rep in $(seq 1 "$REPS"); do
		sbx "$w-gpu-${v#SABER_HX_GPU_}-$first_size-$rep" variant "$w" gpu "$first_size" hls "" "$rep" "$v"
	done
done
# The pipeline's depth (default 4), YSB in gpu mode; and its ingestion
# shared with the GPU's goroutine (gpu mode's default is the producer
# alone, which copied as fast as one goroutine does: docs/gpu.md).
case " $WORKLOADS " in
*" ysb "*)
	for rep in $(seq 1 "$REPS"); do
		for depth in 1 8; do
			sbx "ysb-gpu-depth$depth-$first_size-$rep" variant ysb gpu "$first_size" hls "" "$rep" "--gpu-pipeline-depth $depth"
		done
		sbx "ysb-gpu-ingest-shared-$first_size-$rep" variant ysb gpu "$first_size" hls "" "$rep" "--ingest shared"
	done
	;;
esac

if [ "$full" -eq 1 ]; then
	for d in gpu/internal/device gpu engine cmd/saber-hx; do
		gotest "full-$(echo "$d" | tr / -)" "$d" "$T_TEST"
	done
fi

if [ "$dry" -eq 1 ]; then
	echo "run.sh --dry-run: $nrun saber-hx runs; nothing was run"
	rm -rf "$work"
	exit 0
fi
printf 'finished\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$work/meta.tsv"
printf 'seconds\t%s\n' "$((SECONDS - start))" >>"$work/meta.tsv"
collect
cat "$work/table.txt" 2>/dev/null | tee -a "$OUT/run.log"
if [ ! -s "$OUT/results.json" ]; then
	log "run.sh: no results.json (collect missing or failed)"
	failed_any=1
fi
rm -rf "$work"
if [ "$failed_any" -ne 0 ]; then
	log "run.sh: exit 1 ($((SECONDS - start))s): a step failed, timed out or was skipped (see results.json)"
	exit 1
fi
log "run.sh: exit 0 ($((SECONDS - start))s)"
exit 0
