#!/usr/bin/env bash
# bench-pipeline.sh: the original YSB pipeline on one machine (issue #17):
# events/s end to end through the development broker, and the latency
# ysb check computes from a live run. Needs redis-server (Debian's).
#
# Usage: build/bench-pipeline.sh [-n EVENTS_PER_S] [-d SECS] [-p PARTITIONS]
#
#   -n  produce rate of the live run, events/s (default 50000)
#   -d  seconds of the live run's production (default 40)
#   -p  partitions (default 4)
#
# 1. Backlog: produces -p partitions' worth of events as fast as
#    `ysb produce --rate 1000000` goes for 5 s, then times
#    `ysb --source kafka --stop-at-end` over them (fetch from the broker,
#    JSON decoding, the query, the windows to Redis), and checks the
#    windows. The broker runs in its own process on loopback. Then
#    internal/cmd/kafka-ceiling reads the same topic with franz-go alone,
#    decoding nothing, with 1 client and with one per partition up to the
#    cores: the ceiling of franz-go's consumer on this machine; and once
#    more with one client's fetch requests alone, the batches parsed on
#    as many goroutines as cores (--raw): what a source that leaves the
#    consumer out and parses on its workers could read.
# 2. Live: `ysb --source kafka` while `ysb produce --rate N --skew 50`
#    runs for D seconds; once the partitions went idle the run is stopped
#    with SIGINT, and `ysb check` prints the windows' latency
#    (time_updated - window_start - 10 s) and checks every count.
# Prints the CPU model; every figure is printed, none is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
rate=50000 secs=40 parts=4
while getopts "n:d:p:" o; do
	case $o in
	n) rate=$OPTARG ;;
	d) secs=$OPTARG ;;
	p) parts=$OPTARG ;;
	*) echo "usage: $0 [-n EVENTS_PER_S] [-d SECS] [-p PARTITIONS]" >&2; exit 2 ;;
	esac
done
out=${OUT:-build/out}/pipeline
mkdir -p "$out"
go build -o "$out/saber-hx" ./cmd/saber-hx
go build -o "$out/kafka-local" ./cmd/kafka-local
go build -o "$out/kafka-ceiling" ./internal/cmd/kafka-ceiling
grep -m1 'model name' /proc/cpuinfo || true
echo "cores: $(nproc)"
port=$(( 20000 + $$ % 10000 )) # below the ephemeral range (32768 up by default)
redis=127.0.0.1:$port kafka=127.0.0.1:$(( port + 1 ))
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
start_servers() {
	cleanup; pids=()
	redis-server --port "${redis#*:}" --bind 127.0.0.1 --save '' --appendonly no >"$out/redis.log" 2>&1 &
	pids+=($!)
	"$out/kafka-local" --addr "$kafka" --partitions "$parts" >"$out/kafka.log" 2>&1 &
	pids+=($!)
	sleep 1
	"$out/saber-hx" ysb setup --redis "$redis" --campaigns-out "$out/campaigns.csv" >/dev/null
}
sh=$out/saber-hx

echo "== backlog: produce for 5 s as fast as it goes, then read it all"
start_servers
"$sh" ysb produce --brokers "$kafka" --topic ad-events --rate 1000000 --duration 5s --partitions "$parts" --log "$out/backlog.log" 2>/dev/null
"$sh" ysb --source kafka --brokers "$kafka" --topic ad-events --redis "$redis" --stop-at-end --json 2>/dev/null | tail -1 | tee "$out/backlog.json"
"$sh" ysb check --redis "$redis" --events "$out/backlog.log" | sed -n 1p
fetchers=$(( parts < $(nproc) ? parts : $(nproc) ))
for c in $(printf '%s\n' 1 "$fetchers" | sort -un); do
	"$out/kafka-ceiling" --brokers "$kafka" --topic ad-events --clients "$c"
done
"$out/kafka-ceiling" --brokers "$kafka" --topic ad-events --raw "$(nproc)"

echo "== live: $rate events/s for $secs s over $parts partitions, skew 50 ms, watermark delay 100 ms"
start_servers
"$sh" ysb --source kafka --brokers "$kafka" --topic ad-events --redis "$redis" --watermark-delay 100 --json >"$out/live.json" 2>"$out/live.err" &
run=$!
sleep 1
"$sh" ysb produce --brokers "$kafka" --topic ad-events --rate "$rate" --duration "${secs}s" --skew 50 --partitions "$parts" --log "$out/live.log" 2>/dev/null
sleep 7 # the partitions go idle (5 s): every record counted
kill -INT "$run"
wait "$run" || true
tail -1 "$out/live.json"
"$sh" ysb check --redis "$redis" --events "$out/live.log" --watermark-delay 100
