#!/usr/bin/env bash
# gpu-bundle.sh: build everything a GPU machine without Go needs to check and
# measure saber-hx's CUDA build, into one folder:
#
#   build/gpu-bundle.sh [DIR]      (default build/out/gpu-bundle)
#
#   DIR/run.sh                     the single entry point (build/gpu-run.sh):
#                                  the CUDA tests, then the measurements, all
#                                  bounded in time; results into $OUT
#   DIR/saber-hx                   the binary, built with -tags cuda (each
#                                  binary gzipped: run.sh unpacks them)
#   DIR/collect                    build/gpucollect: run.sh's results.json
#   DIR/tests/<pkg>/<name>.test    `go test -c -tags cuda` for every package
#                                  whose tests differ with the tag, at the
#                                  package's path, so that a test reading
#                                  "../x/y" finds it: every such file or
#                                  folder named in a test file, and each
#                                  package's testdata/, is copied too
#   DIR/VERSION                    the commit and the build's date
#   DIR/kafka-local                the development broker (cmd/kafka-local)
#   DIR/kafka-ceiling              franz-go's consumer alone, decoding
#                                  nothing (internal/cmd/kafka-ceiling)
#   DIR/saber-hx-base              saber-hx as built at PIPELINE_BASE (default
#                                  998441e, the build issue #26 was filed
#                                  on; CPU only): the Kafka pipeline's
#                                  baseline on the same cores
#   DIR/redis/                     this machine's redis-server with the
#                                  shared libraries and loader it runs with
#                                  (the GPU machine may have no Redis and
#                                  no apt): run.sh's Kafka pipeline writes
#                                  its windows to it. Left out, with the
#                                  pipeline, where redis-server is not
#                                  installed here (apt-get install
#                                  redis-server), or with PIPELINE_BASE=none
#
# Binaries are stripped (-ldflags='-s -w'). The bundle must travel with the
# device tool (64 MiB in all, the working tree included): the script prints
# its size and fails over BUNDLE_MAX_MIB (default 60; the tree is about
# 2.5 MiB).
#
# On a GPU machine (the NVIDIA driver, neither Go nor the CUDA toolkit):
# DIR/run.sh (see build/README.md). The binaries do not start without a GPU
# and driver: building them is the check on other machines. Uses
# build/cuda-env.sh for cuda.h and the libcuda.so link stub.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "gpu-bundle.sh: error: $*" >&2
	exit 1
}

out=${1:-build/out/gpu-bundle}
[ $# -le 1 ] || die "usage: build/gpu-bundle.sh [DIR]"
max_mib=${BUNDLE_MAX_MIB:-60}

cuda_env=$(build/cuda-env.sh) || die "build/cuda-env.sh failed (see above)"
eval "$cuda_env"
export CGO_ENABLED=1
ld=(-ldflags='-s -w' -trimpath)

rm -rf "$out"
mkdir -p "$out/tests"

echo "gpu-bundle.sh: building saber-hx -tags cuda" >&2
go build -tags cuda "${ld[@]}" -o "$out/saber-hx" ./cmd/saber-hx
CGO_ENABLED=0 go build "${ld[@]}" -o "$out/collect" ./build/gpucollect
CGO_ENABLED=0 go build "${ld[@]}" -o "$out/kafka-local" ./cmd/kafka-local
CGO_ENABLED=0 go build "${ld[@]}" -o "$out/kafka-ceiling" ./internal/cmd/kafka-ceiling
cp build/gpu-run.sh "$out/run.sh"
chmod +x "$out/run.sh"
{
	git rev-parse HEAD 2>/dev/null || echo "no git"
	git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo "with uncommitted changes"
	date -u +%Y-%m-%dT%H:%M:%SZ
} | paste -sd' ' >"$out/VERSION"

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
root=$(pwd)
# run.sh runs these, in this order: each must be there.
for want in gpu/internal/device gpu engine cmd/saber-hx; do
	found=0
	for p in "${pkgs[@]}"; do
		[ "${p%% *}" = "$module/$want" ] && found=1
	done
	[ "$found" -eq 1 ] || die "package $want has no cuda-tagged tests any more: run.sh would miss its test binary"
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
	go test -c -tags cuda "${ld[@]}" -o "$out/tests/$rel/$name.test" "$path"
	if [ -d "$dir/testdata" ]; then
		cp -r "$dir/testdata" "$out/tests/$rel/"
	fi
	# Files outside the package that its tests read: string literals
	# "../..." in its test files, resolved from the package's folder and
	# copied to the same place relative to tests/<pkg>.
	while IFS= read -r ref; do
		src=$(cd "$dir" && realpath -m "$ref")
		case $src in
		"$root"/*) ;;
		*) die "$rel's tests read $ref, outside the repository" ;;
		esac
		[ -e "$src" ] || die "$rel's tests read $ref ($src), which does not exist"
		# Copy the longest existing prefix that names a file or folder.
		dst="$out/tests/${src#"$root"/}"
		mkdir -p "$(dirname "$dst")"
		if [ -d "$src" ]; then
			mkdir -p "$dst" && cp -r "$src/." "$dst/"
		else
			cp "$src" "$dst"
		fi
		echo "gpu-bundle.sh:   with ${src#"$root"/} (read by $rel's tests)" >&2
	done < <(cd "$dir" && grep -ho '"\.\./[^"]*"' -- *_test.go 2>/dev/null | tr -d '"' | sort -u)
done

# The Kafka pipeline of issue #26 (run.sh's pipeline group): the baseline
# build from its commit, in a worktree of its own, and a Redis server that
# runs wherever the kernel does (its loader and libraries beside it).
base=${PIPELINE_BASE:-998441e}
if [ "$base" != none ]; then
	redis=$(command -v redis-server || true)
	[ -n "$redis" ] || die "redis-server is not installed (apt-get install redis-server), and run.sh's Kafka pipeline needs one: install it, or set PIPELINE_BASE=none to leave the pipeline out"
	abs_out=$(cd "$out" && pwd)
	wt=$(mktemp -d "${TMPDIR:-/tmp}/saber-base.XXXXXX")
	git worktree add -q --detach "$wt" "$base" || die "git worktree add $base failed"
	echo "gpu-bundle.sh: building saber-hx at $base (the pipeline's baseline)" >&2
	(cd "$wt" && CGO_ENABLED=0 go build "${ld[@]}" -o "$abs_out/saber-hx-base" ./cmd/saber-hx) || {
		git worktree remove --force "$wt"
		die "building saber-hx at $base failed"
	}
	git worktree remove --force "$wt"
	mkdir -p "$out/redis/lib"
	cp -L "$redis" "$out/redis/redis-server"
	ldd "$redis" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | while IFS= read -r lib; do
		cp -L "$lib" "$out/redis/lib/"
	done
	ls "$out"/redis/lib/ld-linux* >/dev/null 2>&1 || die "no loader (ld-linux) among redis-server's libraries"
	"$out/redis/lib/"ld-linux* --library-path "$out/redis/lib" "$out/redis/redis-server" --version >/dev/null ||
		die "the bundled redis-server does not start through its bundled loader"
	printf '%s\n' "$base $(git rev-parse "$base")" >"$out/BASE"
fi

# The binaries travel gzipped (about a third of their size: the test binary
# of cmd/saber-hx alone is larger than the working tree); run.sh unpacks
# them in place before its first step.
find "$out" -type f \( -name '*.test' -o -name saber-hx -o -name collect -o -name kafka-local -o -name kafka-ceiling -o -name saber-hx-base -o -path "$out/redis/*" \) -exec gzip -6 {} +

bytes=$(du -sb "$out" | cut -f1)
mib=$(((bytes + (1 << 20) - 1) >> 20))
parts="saber-hx, collect, kafka-local, kafka-ceiling, run.sh and ${#pkgs[@]} test binaries"
[ -e "$out/BASE" ] && parts="$parts; the pipeline's baseline ($(cut -d' ' -f1 "$out/BASE")) and Redis"
echo "gpu-bundle.sh: wrote $out: $mib MiB ($bytes bytes): $parts:" >&2
(cd "$out" && find . -type f -size +1M -printf '  %p %s\n' | sort) >&2
if [ "$mib" -gt "$max_mib" ]; then
	die "the bundle is $mib MiB, over BUNDLE_MAX_MIB=$max_mib (the device tool carries 64 MiB in all, the working tree included)"
fi
echo "gpu-bundle.sh: on a GPU machine: $out/run.sh (see build/README.md); here: $out/run.sh --dry-run" >&2
