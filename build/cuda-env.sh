#!/usr/bin/env bash
# cuda-env.sh: make `go build -tags cuda ./...` work on a Debian machine with
# no CUDA installed and no GPU.
#
#   eval "$(build/cuda-env.sh)"
#   go build -tags cuda ./...
#
# gorgonia.org/cu v0.9.6 needs, to compile and link, only the driver API
# header (cuda.h) and a libcuda.so to link against. Debian's non-free package
# nvidia-cuda-dev (CUDA 11.8 on bookworm) carries both: /usr/include/cuda.h
# and the link stub /usr/lib/x86_64-linux-gnu/stubs/libcuda.so. This script
# downloads that package with `apt-get download` (it does not install it),
# extracts just those two files into a cache directory, and prints on stdout
# the export lines for CGO_CFLAGS and CGO_LDFLAGS; nothing else goes to
# stdout (progress and errors go to stderr).
#
# It is idempotent: a second run finds the files in the cache, touches
# neither apt nor the network, and prints the same lines. Where Debian's
# non-free component is not among apt's sources, it adds it (a file
# /etc/apt/sources.list.d/saber-hx-non-free.sources, with only the
# components the machine lacks) and runs apt-get update; that needs root,
# or sudo.
#
# Options:
#   --toolkit  also install Debian's nvidia-cuda-toolkit with apt (nvcc,
#              ptxas; about 2 GiB installed). Not needed to build Go code.
#
# Environment:
#   SABER_CUDA_CACHE  cache directory (default ~/.cache/saber-hx/cuda)
#
# The headers are CUDA 11.8's: cu v0.9.6 compiles against 11.8 and 12
# headers, not against 13's. A binary built on 11.8 headers runs on newer
# drivers. The stub is for linking only: at run time the binary loads the
# driver's libcuda.so.1, so a cuda build does not start on a machine without
# the NVIDIA driver (and cu's init exits the process where there is no GPU).
set -euo pipefail

pkg=nvidia-cuda-dev
arch_triplet=x86_64-linux-gnu
header=usr/include/cuda.h
stub=usr/lib/$arch_triplet/stubs/libcuda.so
sources_file=/etc/apt/sources.list.d/saber-hx-non-free.sources

log() { echo "cuda-env: $*" >&2; }
die() {
	echo "cuda-env: error: $*" >&2
	exit 1
}

toolkit=0
for arg in "$@"; do
	case "$arg" in
	--toolkit) toolkit=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
		exit 0
		;;
	*) die "unknown argument $arg (usage: build/cuda-env.sh [--toolkit])" ;;
	esac
done

cache=${SABER_CUDA_CACHE:-$HOME/.cache/saber-hx/cuda}
root=$cache/root

# as_root runs a command as root: directly when we are root, else with sudo.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root (or sudo) to run: $*"
	fi
}

# candidate prints the version apt would download for $1, or nothing.
candidate() {
	apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ { if ($2 != "(none)") print $2 }'
}

# ensure_nonfree makes sure apt knows Debian's non-free component, adding
# the components that are missing for this release and refreshing the lists.
ensure_nonfree() {
	if [ -n "$(candidate "$pkg")" ]; then
		return
	fi
	[ -r /etc/os-release ] || die "no /etc/os-release: this script needs Debian (bookworm)"
	# shellcheck disable=SC1091
	. /etc/os-release
	[ "${ID:-}" = debian ] || die "this script needs Debian (bookworm); found ${ID:-unknown}. Install the CUDA toolkit's cuda.h and libcuda.so stub yourself and set CGO_CFLAGS=-I<include dir> CGO_LDFLAGS=-L<stub dir>"
	codename=${VERSION_CODENAME:-}
	[ -n "$codename" ] || die "cannot tell the Debian release from /etc/os-release"
	if [ "$codename" != bookworm ]; then
		log "warning: tested on bookworm (CUDA 11.8 headers); this is $codename"
	fi
	# Which of the components are already configured for this release?
	# (apt-get indextargets lists every configured index, whatever the
	# sources format.) Configuring one twice makes apt warn on every call.
	have=$(apt-get indextargets --format '$(RELEASE) $(COMPONENT)' 'Created-By: Packages' 2>/dev/null |
		awk -v s="$codename" '$1 == s { print $2 }' | sort -u)
	missing=""
	for c in main contrib non-free non-free-firmware; do
		if ! grep -qx -- "$c" <<<"$have"; then
			missing="$missing $c"
		fi
	done
	missing=${missing# }
	if [ -n "$missing" ]; then
		keyring=/usr/share/keyrings/debian-archive-keyring.gpg
		[ -r "$keyring" ] || die "missing $keyring (package debian-archive-keyring)"
		log "adding Debian components '$missing' for $codename to apt ($sources_file)"
		as_root tee "$sources_file" >/dev/null <<EOF
# Added by saber-hx build/cuda-env.sh: Debian's non-free component, for
# nvidia-cuda-dev (cuda.h and the libcuda.so link stub).
Types: deb
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: $missing
Signed-By: $keyring
EOF
	else
		log "non-free is configured but apt has no candidate for $pkg: refreshing the package lists"
	fi
	log "apt-get update"
	as_root apt-get update -qq >&2 || die "apt-get update failed (network, or a broken apt source?)"
	[ -n "$(candidate "$pkg")" ] || die "apt still has no candidate for $pkg after enabling non-free for $codename"
}

# fetch downloads the package into the cache and extracts the two files.
fetch() {
	command -v apt-get >/dev/null 2>&1 || die "no apt-get: this script needs Debian (bookworm)"
	command -v dpkg-deb >/dev/null 2>&1 || die "no dpkg-deb"
	ensure_nonfree
	version=$(candidate "$pkg")
	debs=$cache/debs
	mkdir -p "$debs"
	deb=$(ls "$debs"/"${pkg}"_*.deb 2>/dev/null | head -1 || true)
	if [ -z "$deb" ] || ! dpkg-deb --info "$deb" >/dev/null 2>&1; then
		rm -f "$debs"/*.deb "$debs"/*.deb.partial
		log "downloading $pkg $version (a large package; only two files are kept)"
		# Run as root, apt drops to the _apt user to download, which may
		# not write into a home directory; download as the caller instead.
		(cd "$debs" && apt-get download -q -o APT::Sandbox::User="$(id -un)" "$pkg" >&2) ||
			die "apt-get download $pkg failed"
		deb=$(ls "$debs"/"${pkg}"_*.deb 2>/dev/null | head -1 || true)
		[ -n "$deb" ] || die "apt-get download left no ${pkg}_*.deb in $debs"
	fi
	log "extracting cuda.h and the libcuda.so stub from $(basename "$deb")"
	tmp=$(mktemp -d "$cache/extract.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" "./$header" "./$stub" ||
		die "$(basename "$deb") does not hold /$header and /$stub"
	# Replace the cache's tree in one step, so that an interrupted run never
	# leaves a half-written one behind.
	rm -rf "$root"
	mv "$tmp" "$root"
	trap - EXIT
	chmod 0755 "$root"
	echo "$pkg $version" >"$cache/VERSION"
	# The .deb is large and no longer needed.
	rm -f "$debs"/*.deb
	rmdir "$debs" 2>/dev/null || true
}

mkdir -p "$cache"
if [ -s "$root/$header" ] && [ -s "$root/$stub" ] && [ -s "$cache/VERSION" ]; then
	log "using cached $(cat "$cache/VERSION") in $cache"
else
	fetch
fi

if [ "$toolkit" -eq 1 ]; then
	if command -v nvcc >/dev/null 2>&1 && command -v ptxas >/dev/null 2>&1; then
		log "nvcc already installed: $(command -v nvcc)"
	else
		ensure_nonfree
		log "installing nvidia-cuda-toolkit with apt (large)"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nvidia-cuda-toolkit >&2 ||
			die "apt-get install nvidia-cuda-toolkit failed"
	fi
fi

printf 'export CGO_CFLAGS="-O2 -g -I%s"\n' "$root/usr/include"
printf 'export CGO_LDFLAGS="-O2 -g -L%s"\n' "$root/usr/lib/$arch_triplet/stubs"
