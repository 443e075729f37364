#!/usr/bin/env bash
# gpu-bundle.sh: build what a GPU machine without Go needs to check
# saber-hx's CUDA build, into one folder:
#
#   build/gpu-bundle.sh [DIR]      (default build/out/gpu-bundle)
#
#   DIR/saber-hx                   the binary, built with -tags cuda
#   DIR/tests/<pkg>/<name>.test    `go test -c -tags cuda` for every package
#                                  whose tests differ with the tag (their
#                                  testdata/ copied next to them): at least
#                                  gpu and offload (the CUDA device against
#                                  the emulator and the CPU kernels)
#   DIR/run.sh                     runs every test binary with -test.v (from
#                                  its own folder), then ./saber-hx topology;
#                                  exits 1 if any of them fails
#   DIR/measure.sh                 then the figures for docs/gpu.md: copy
#                                  bandwidth, YSB and select/proj/groupby in
#                                  cpu, gpu and hybrid modes (SECS each)
#
# Copy DIR to the GPU machine (it needs the NVIDIA driver, not Go nor the
# CUDA toolkit) and run DIR/run.sh, then DIR/measure.sh, there. Extra arguments to run.sh go to
# every test binary (e.g. -test.run TestX). The binaries do not start
# without a GPU and driver: building them is the check on other machines.
# Uses build/cuda-env.sh for cuda.h and the libcuda.so link stub.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "gpu-bundle.sh: error: $*" >&2
	exit 1
}

out=${1:-build/out/gpu-bundle}
[ $# -le 1 ] || die "usage: build/gpu-bundle.sh [DIR]"

cuda_env=$(build/cuda-env.sh) || die "build/cuda-env.sh failed (see above)"
eval "$cuda_env"
export CGO_ENABLED=1

rm -rf "$out"
mkdir -p "$out/tests"

echo "gpu-bundle.sh: building saber-hx -tags cuda" >&2
go build -tags cuda -o "$out/saber-hx" ./cmd/saber-hx

# Packages whose test files change with the tag: they have cuda-tagged tests.
fmt='{{.ImportPath}} {{.Dir}} {{join .TestGoFiles ","}}/{{join .XTestGoFiles ","}}'
pkgs=()
while read -r path dir files_cuda; do
	files_plain=$(go list -e -f "$fmt" "$path" | cut -d' ' -f3-)
	if [ "$files_cuda" != "$files_plain" ]; then
		pkgs+=("$path $dir")
	fi
done < <(go list -e -tags cuda -f "$fmt" ./...)
[ "${#pkgs[@]}" -gt 0 ] || die "found no package with cuda-tagged tests"

module=$(go list -m)
# The packages whose GPU checks the bundle exists for: the device layer and
# the offload kernels against the emulator and the CPU.
for want in gpu offload; do
	found=0
	for p in "${pkgs[@]}"; do
		[ "${p%% *}" = "$module/$want" ] && found=1
	done
	[ "$found" -eq 1 ] || die "package $want has no cuda-tagged tests any more: its test binary would be missing"
done
for p in "${pkgs[@]}"; do
	path=${p%% *}
	dir=${p#* }
	rel=${path#"$module"}
	rel=${rel#/}
	[ -n "$rel" ] || rel=root
	name=$(basename "$rel")
	echo "gpu-bundle.sh: go test -c -tags cuda $rel" >&2
	mkdir -p "$out/tests/$rel"
	go test -c -tags cuda -o "$out/tests/$rel/$name.test" "$path"
	if [ -d "$dir/testdata" ]; then
		cp -r "$dir/testdata" "$out/tests/$rel/"
	fi
done

cat >"$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# run.sh: saber-hx's CUDA checks on a GPU machine (made by build/gpu-bundle.sh).
# Runs every test binary under tests/ with -test.v from its own folder (plus
# any arguments given here), then ./saber-hx topology. Exits 1 if any fails.
set -uo pipefail
cd "$(dirname "$0")"
failed=()
while IFS= read -r t; do
	echo "=== $t"
	if ! (cd "$(dirname "$t")" && "./$(basename "$t")" -test.v "$@"); then
		failed+=("$t")
	fi
done < <(find tests -name '*.test' -type f | sort)
echo "=== ./saber-hx topology"
if ! ./saber-hx topology; then
	failed+=("saber-hx topology")
fi
if [ "${#failed[@]}" -gt 0 ]; then
	echo "FAILED: ${failed[*]}"
	exit 1
fi
echo "ALL PASSED"
RUN
chmod +x "$out/run.sh"

cat >"$out/measure.sh" <<'MEASURE'
#!/usr/bin/env bash
# measure.sh: the GPU figures docs/gpu.md asks for (made by
# build/gpu-bundle.sh), after run.sh passed: GPU 0's copy bandwidth from
# page-locked memory and the YSB kernels' rate, then YSB and the bench
# workloads select, proj and groupby in cpu, gpu and hybrid modes, one JSON
# summary line each (throughput, processors.tasks: the hybrid split,
# gpu_fallback_tasks). SECS (default 10) is each run's measured time.
set -uo pipefail
cd "$(dirname "$0")"
SECS=${SECS:-10}
echo "=== copy bandwidth and the YSB kernels"
(cd tests/offload && ./offload.test -test.v -test.run 'TestCUDACopyBandwidth|TestCUDAYSB') | grep -E 'KiB:|rate|Mtuples|GB/s|^(---|ok|FAIL|PASS)'
for mode in cpu gpu hybrid; do
	echo "=== ysb --mode $mode"
	./saber-hx ysb --mode "$mode" --duration "${SECS}s" --warmup 2s --json 2>/dev/null | tail -n 1
done
for w in select proj groupby; do
	for mode in cpu gpu hybrid; do
		echo "=== bench $w --mode $mode"
		./saber-hx bench "$w" --mode "$mode" --duration "${SECS}s" --json 2>/dev/null | tail -n 1
	done
done
MEASURE
chmod +x "$out/measure.sh"
echo "gpu-bundle.sh: wrote $out: saber-hx, run.sh, measure.sh and ${#pkgs[@]} test binary(ies):" >&2
(cd "$out" && find tests -name '*.test' -type f | sort) >&2
