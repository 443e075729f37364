#!/usr/bin/env bash
# ptx.sh: compile kernels/cuda/*.cu to the committed kernels/cuda/*.ptx and
# validate every PTX offline with ptxas (no GPU needed).
#
#   build/ptx.sh            regenerate kernels/cuda/*.ptx, then validate them
#   build/ptx.sh --check    regenerate into a temporary directory and compare
#                           with the committed PTX: exit 1 naming each file
#                           that differs, is missing or has no source
#
# Needs nvcc and ptxas (Debian: build/cuda-env.sh --toolkit, CUDA 11.8) and a
# host compiler nvcc 11.8 accepts: g++-11 or clang-14 (the first found, or
# $NVCC_CCBIN). The PTX is for virtual architecture $PTX_ARCH (default
# compute_70: the driver JIT-compiles it for the GPU it runs on, H100/H200
# included); ptxas checks it compiles for $PTXAS_ARCH (default sm_90).
# The generated PTX depends on the nvcc version (its header names it):
# regenerate with the same toolkit as the committed files, or commit anew.
# Idempotent: running it twice leaves the same files.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=kernels/cuda
arch=${PTX_ARCH:-compute_70}
ptxas_arch=${PTXAS_ARCH:-sm_90}

die() {
	echo "ptx.sh: error: $*" >&2
	exit 1
}

check=0
for a in "$@"; do
	case "$a" in
	--check) check=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument $a (usage: build/ptx.sh [--check])" ;;
	esac
done

command -v nvcc >/dev/null 2>&1 || die "nvcc not found: run build/cuda-env.sh --toolkit (Debian's nvidia-cuda-toolkit), or put a CUDA toolkit's bin on PATH"
command -v ptxas >/dev/null 2>&1 || die "ptxas not found: run build/cuda-env.sh --toolkit"

ccbin=${NVCC_CCBIN:-}
if [ -z "$ccbin" ]; then
	for c in g++-11 clang-14; do
		if command -v "$c" >/dev/null 2>&1; then
			ccbin=$c
			break
		fi
	done
fi
[ -n "$ccbin" ] || die "no host compiler nvcc 11.8 accepts: apt-get install clang-14 (or g++-11), or set NVCC_CCBIN"

shopt -s nullglob
sources=("$dir"/*.cu)
[ "${#sources[@]}" -gt 0 ] || die "no $dir/*.cu"

out=$dir
if [ "$check" -eq 1 ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

# compile writes $out/<name>.ptx from $dir/<name>.cu, replacing it only once
# nvcc has succeeded.
compile() {
	local src=$1 name ptx tmp
	name=$(basename "$src" .cu)
	ptx=$out/$name.ptx
	tmp=$(mktemp "$out/.$name.XXXXXX")
	if ! nvcc -ptx -arch="$arch" -O3 -ccbin "$ccbin" -o "$tmp" "$src"; then
		rm -f "$tmp"
		die "nvcc failed on $src"
	fi
	chmod 0644 "$tmp"
	mv "$tmp" "$ptx"
}

for src in "${sources[@]}"; do
	compile "$src"
done

status=0
for src in "${sources[@]}"; do
	ptx=$out/$(basename "$src" .cu).ptx
	if ! ptxas -arch="$ptxas_arch" -o /dev/null "$ptx"; then
		echo "ptx.sh: ptxas -arch=$ptxas_arch rejects $ptx (from $src)" >&2
		status=1
	fi
done
[ "$status" -eq 0 ] || exit 1

if [ "$check" -eq 1 ]; then
	for src in "${sources[@]}"; do
		name=$(basename "$src" .cu).ptx
		if [ ! -f "$dir/$name" ]; then
			echo "ptx.sh: $dir/$name is missing: run build/ptx.sh and commit it" >&2
			status=1
		elif ! cmp -s "$out/$name" "$dir/$name"; then
			echo "ptx.sh: $dir/$name differs from what $src compiles to: run build/ptx.sh and commit it" >&2
			have=$(grep -m1 'Cuda compilation tools' "$dir/$name" || true)
			want=$(grep -m1 'Cuda compilation tools' "$out/$name" || true)
			if [ "$have" != "$want" ]; then
				echo "ptx.sh:   (committed with '${have#// }', this nvcc is '${want#// }')" >&2
			fi
			diff -u "$dir/$name" "$out/$name" | head -40 >&2 || true
			status=1
		fi
	done
	for ptx in "$dir"/*.ptx; do
		if [ ! -f "${ptx%.ptx}.cu" ]; then
			echo "ptx.sh: $ptx has no source ${ptx%.ptx}.cu: remove it" >&2
			status=1
		fi
	done
	[ "$status" -eq 0 ] && echo "ptx.sh: ${#sources[@]} PTX file(s) up to date, ptxas -arch=$ptxas_arch accepts them"
	exit "$status"
fi
echo "ptx.sh: wrote ${#sources[@]} PTX file(s) in $dir (nvcc -arch=$arch, -ccbin $ccbin); ptxas -arch=$ptxas_arch accepts them"
