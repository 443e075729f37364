#!/usr/bin/env bash
# soak.sh: the YSB pipeline through the development broker and Redis for a
# while, with the engine killed -9 and restarted from its checkpoints
# (issue #18's soak test; loopback only, docs/operations.md "Soak test").
#
# Usage: build/soak.sh [-d DURATION] [-r RESTARTS] [-n EVENTS_PER_S] [-i SAMPLE_S] [-f FACTOR]
#
#   -d  how long ysb produce runs: 90s, 10m, 1h or seconds (default 10m)
#   -r  kill -9 and restart the engine this many times, at moments spread
#       over the duration (default 2)
#   -n  produce rate, events/s (default 2000)
#   -i  seconds between samples (default 5; 2 where -d is under 3 minutes)
#   -f  flatness factor (default 1.5): the last third's largest sample of
#       RSS and of goroutines may be at most FACTOR times the first
#       third's (samples within a warm-up after each start left out:
#       a tenth of the duration, at most 30 s)
#
# Starts redis-server and kafka-local (4 partitions) on free loopback
# ports, ysb setup, ysb produce --log at a steady rate, and
# ysb --source kafka --group soak --checkpoint-dir --metrics-addr; samples
# the engine's RSS (/proc/PID/status VmRSS), threads and goroutines (the
# metrics endpoint's go_goroutines) into OUT/soak/samples.csv; at the end
# stops the engine with SIGINT once the partitions went idle, runs ysb
# check (every window's count against the oracle over the log) and the
# flatness test. Exit 0 only when both pass. Everything it started is
# stopped on any exit.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=10m restarts=2 rate=2000 interval= factor=1.5
while getopts "d:r:n:i:f:" o; do
	case $o in
	d) dur=$OPTARG ;;
	r) restarts=$OPTARG ;;
	n) rate=$OPTARG ;;
	i) interval=$OPTARG ;;
	f) factor=$OPTARG ;;
	*) sed -n 's/^# \{0,1\}//; 3,17p' "$0" >&2; exit 2 ;;
	esac
done
case $dur in
*h) secs=$(( ${dur%h} * 3600 )) ;;
*m) secs=$(( ${dur%m} * 60 )) ;;
*s) secs=${dur%s} ;;
*) secs=$dur ;;
esac
if ! [[ $secs =~ ^[0-9]+$ ]] || (( secs < 20 )); then
	echo "soak.sh: -d $dur: want at least 20 s (90s, 10m, 1h)" >&2; exit 2
fi
if ! [[ $restarts =~ ^[0-9]+$ ]]; then echo "soak.sh: -r $restarts: want a count" >&2; exit 2; fi
[[ -n $interval ]] || { interval=5; (( secs < 180 )) && interval=2; }
warmup=$(( secs / 10 < 30 ? secs / 10 : 30 )) # seconds after each start left out of the test: the heap grows to its size

out=${OUT:-build/out}/soak
rm -rf "$out"
mkdir -p "$out"
go build -o "$out/saber-hx" ./cmd/saber-hx
go build -o "$out/kafka-local" ./cmd/kafka-local
sh=$out/saber-hx
grep -m1 'model name' /proc/cpuinfo || true
echo "cores: $(nproc); duration ${secs}s, $restarts restarts, $rate events/s, a sample every ${interval}s, warm-up ${warmup}s"

pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# nap sleeps in the background: a signal's trap runs at once, not after.
nap() { sleep "$1" & wait $! || true; }

# free_port prints a loopback port nothing listens on, below the kernel's
# ephemeral range: a port in it can be taken at any moment by an outgoing
# connection's local end.
eph_low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
(( eph_low > 11000 )) || eph_low=32768
free_port() {
	local p
	while :; do
		p=$(( 10000 + RANDOM % (eph_low - 10000) ))
		if ! listens "$p"; then echo "$p"; return; fi
	done
}
# listens reports whether something listens on port $1.
listens() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# start_server NAME LOG CMD... starts CMD with {PORT} replaced by a free
# port, waits until it listens there (10 s at most) and sets $port; where
# the process ends first (another process took the port between the
# check and the bind), it tries again on another port, 5 times at most.
start_server() {
	local name=$1 log=$2 try i pid
	shift 2
	for try in 1 2 3 4 5; do
		port=$(free_port)
		"${@//\{PORT\}/$port}" >"$log" 2>&1 &
		pid=$!
		for i in $(seq 100); do
			if listens "$port"; then pids+=("$pid"); return 0; fi
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		echo "soak.sh: $name did not listen on port $port (try $try):" >&2; tail -3 "$log" >&2
	done
	return 1
}
start_server redis-server "$out/redis.log" redis-server --port '{PORT}' --bind 127.0.0.1 --save '' --appendonly no
redis=127.0.0.1:$port
start_server kafka-local "$out/kafka.log" "$out/kafka-local" --addr '127.0.0.1:{PORT}' --partitions 4 --topic ad-events
kafka=127.0.0.1:$port
"$sh" ysb setup --redis "$redis" >"$out/setup.log"

# scrape prints the engine's go_goroutines ("" where it does not answer).
# The engine serves its metrics on a port it picks (127.0.0.1:0) and says
# which on stderr; the last such line is the running engine's (until a
# restarted one prints its own, the old address answers nothing).
scrape() {
	local url body hostport
	url=$(sed -n 's/^saber-hx: serving Prometheus metrics at //p' "$out/engine.err" 2>/dev/null | tail -1)
	[[ -n $url ]] || return 0
	if command -v curl >/dev/null; then
		body=$(curl -s --max-time 2 "$url" || true)
	else
		hostport=${url#http://}; hostport=${hostport%%/*}
		body=$( (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}" && printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&3 && timeout 2 cat <&3) 2>/dev/null || true)
	fi
	awk '$1 == "go_goroutines" { print $2 }' <<<"$body"
}

engine=
start_engine() {
	"$sh" ysb --source kafka --brokers "$kafka" --topic ad-events --redis "$redis" --group soak \
		--checkpoint-dir "$out/checkpoints" --checkpoint-interval 1s --metrics-addr 127.0.0.1:0 --workers 2 \
		>>"$out/engine.out" 2>>"$out/engine.err" &
	engine=$!
	pids+=("$engine")
	started=$SECONDS
}

t0=$SECONDS
"$sh" ysb produce --brokers "$kafka" --topic ad-events --rate "$rate" --duration "${secs}s" --skew 50 --partitions 4 \
	--log "$out/events.log" >"$out/produce.out" 2>"$out/produce.err" &
producer=$!
pids+=("$producer")
start_engine
kills=()
for (( i = 1; i <= restarts; i++ )); do
	# Spread: restart i near i/(restarts+1) of the duration, give or take
	# a tenth of the gap between two.
	gap=$(( secs / (restarts + 1) ))
	kills+=( $(( i * gap + (RANDOM % (gap / 5 + 1)) - gap / 10 )) )
done
echo "restarts at ${kills[*]:-none} s"
echo "t_s,pid,rss_kb,threads,goroutines,since_start_s" >"$out/samples.csv"
k=0
while (( SECONDS - t0 < secs )); do
	now=$(( SECONDS - t0 ))
	if (( k < ${#kills[@]} && now >= kills[k] )); then
		kill -9 "$engine"
		wait "$engine" 2>/dev/null || true
		echo "t=${now}s: engine $engine killed -9, restarting"
		k=$(( k + 1 ))
		start_engine
	fi
	if ! kill -0 "$engine" 2>/dev/null; then
		echo "soak.sh: the engine exited on its own (t=${now}s):" >&2; tail -20 "$out/engine.err" >&2; exit 1
	fi
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$engine/status" 2>/dev/null || true)
	thr=$(awk '/^Threads:/ { print $2 }' "/proc/$engine/status" 2>/dev/null || true)
	echo "$now,$engine,${rss:-},${thr:-},$(scrape),$(( SECONDS - started ))" >>"$out/samples.csv"
	nap "$interval"
done
wait "$producer" || { echo "soak.sh: ysb produce failed:" >&2; tail -5 "$out/produce.err" >&2; exit 1; }
sed -n 1p "$out/produce.out"
nap 7 # the partitions go idle (5 s): every record is merged
kill -INT "$engine"
rc=0
wait "$engine" || rc=$?
if (( rc != 130 )); then
	echo "soak.sh: the engine's last run ended with $rc, not 130 (SIGINT):" >&2; tail -20 "$out/engine.err" >&2; exit 1
fi
echo "restores: $(grep -c "restored checkpoint" "$out/engine.err" || true)"
grep 'first window after the restore' "$out/engine.err" | sed 's/.*: /recovery: /' || true
grep "^  checkpoints" "$out/engine.out" | tail -1 || true

check=0
"$sh" ysb check --redis "$redis" --events "$out/events.log" >"$out/check.out" 2>&1 || check=$?
sed -n '1,2p;/^latency/,$p' "$out/check.out"
flat=0
awk -F, -v secs="$secs" -v warm="$warmup" -v f="$factor" '
	NR == 1 || $6 < warm || $3 == "" { next }
	{
		third = ($1 < secs / 3) ? 1 : ($1 >= 2 * secs / 3 ? 3 : 2)
		if ($3 > rss[third]) rss[third] = $3
		if ($5 != "" && $5 > gor[third]) gor[third] = $5
		if ($4 > thr[third]) thr[third] = $4
		n[third]++
	}
	END {
		if (n[1] == 0 || n[3] == 0) { print "flatness: too few samples after warm-up (first third " n[1] ", last " n[3] ")"; exit 1 }
		bad = 0
		printf "RSS max: first third %d kB, last third %d kB (x%.2f)\n", rss[1], rss[3], rss[3] / rss[1]
		printf "goroutines max: first third %d, last third %d (x%.2f)\n", gor[1], gor[3], gor[1] ? gor[3] / gor[1] : 0
		printf "threads max: first third %d, last third %d\n", thr[1], thr[3]
		if (rss[3] > f * rss[1]) { print "RSS grew by more than x" f; bad = 1 }
		if (gor[1] == 0) { print "no go_goroutines sampled"; bad = 1 }
		else if (gor[3] > f * gor[1]) { print "goroutines grew by more than x" f; bad = 1 }
		exit bad
	}' "$out/samples.csv" || flat=$?
# Per process (each start to its kill): RSS after the warm-up and at the
# end, to show growth within a life that a restart would hide.
awk -F, -v warm="$warmup" 'NR > 1 && $6 >= warm && $3 != "" {
		if (!($2 in first)) { first[$2] = $3; order[++n] = $2 }
		last[$2] = $3; life[$2] = $6
	}
	END { for (i = 1; i <= n; i++) { p = order[i]; printf "engine %s: RSS %d kB after the warm-up, %d kB at %d s\n", p, first[p], last[p], life[p] } }' "$out/samples.csv"
echo "samples: $out/samples.csv ($(( $(wc -l <"$out/samples.csv") - 1 )))"
if (( check != 0 )); then echo "soak: FAIL: ysb check (see $out/check.out)"; exit 1; fi
if (( flat != 0 )); then echo "soak: FAIL: RSS or goroutines not flat (factor $factor)"; exit 1; fi
echo "soak: PASS: every count checked; RSS and goroutines flat within x$factor"
