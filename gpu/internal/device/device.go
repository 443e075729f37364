// Package device is the device layer of saber-hx's GPU processor (package
// gpu, the directory above): which CUDA devices the machine has (name,
// memory, compute capability, PCI bus id, NUMA node), page-locked host
// memory for asynchronous copies, and the gorgonia.org/cu bindings with the
// cgo shim where cu lacks a call. The processor itself (per task: copy the
// bytes in, run the kernels, copy the fragments out, several tasks in
// flight on separate streams, the same window fragments as the CPU kernels)
// is package gpu's, run by the engine (docs/gpu.md); package gpu re-exports
// what the command line needs (Devices, Built, Available, ErrNotBuilt).
//
// # Builds
//
// A plain build (`go build ./...`, CGO_ENABLED=0 included) has no GPU
// support: Built reports false and every entry point returns ErrNotBuilt,
// which says how to make a build with it. A build with `-tags cuda` uses the
// CUDA driver API through gorgonia.org/cu v0.9.6 (with a small cgo shim
// where cu lacks a call, see pinned.go). It needs cgo, cuda.h and a
// libcuda.so to link against; on Debian, build/cuda-env.sh fetches both:
//
//	eval "$(build/cuda-env.sh)"
//	go build -tags cuda ./...
//
// # The init trap
//
// gorgonia.org/cu calls cuInit in its package init and, when that fails,
// prints the error to stdout and exits the process with status 1. A binary
// built with `-tags cuda` therefore does not start at all on a machine
// without an NVIDIA GPU and driver (and, linked against libcuda.so.1, not
// even where the driver library is missing): not `saber-hx topology`, not
// `saber-hx ysb --mode cpu`, not a test binary. Use a plain build there.
// For the same reason every import of gorgonia.org/cu stays behind the
// `cuda` build tag, here and in any package that will use it.
//
// # Kernel parameters
//
// cu's Function.Launch passes 8 bytes per kernel parameter: every parameter
// of a saber-hx kernel must be 64-bit (pointers, int64, uint64, double).
package device

import "errors"

// ErrNotBuilt is returned by every entry point of a build without CUDA.
var ErrNotBuilt = errors.New("saber-hx was built without CUDA support: GPU offload needs a binary built with `-tags cuda` " +
	"(on Debian: eval \"$(build/cuda-env.sh)\"; go build -tags cuda ./cmd/saber-hx; see build/README.md)")

// ErrNoDevice is returned by Available in a CUDA build that finds no device.
var ErrNoDevice = errors.New("gpu: no CUDA device found")

// Device describes one GPU.
type Device struct {
	Index        int    // CUDA device ordinal
	Name         string // for example "NVIDIA H200"
	MemBytes     int64  // total device memory
	ComputeMajor int    // compute capability, major (9 for sm_90)
	ComputeMinor int    // compute capability, minor
	PCIBusID     string // domain:bus:device.function, as in /sys/bus/pci/devices ("0000:3b:00.0"); "" where unknown
	NUMANode     int    // the node the device is attached to; -1 where unknown
}

// Built reports whether this binary was built with CUDA support (the
// `cuda` build tag).
func Built() bool { return built }

// Devices lists the GPUs this build can use, in CUDA ordinal order.
func Devices() ([]Device, error) { return devices() }

// Available reports whether GPU processors can be started, and why not:
// ErrNotBuilt without CUDA, ErrNoDevice where there is no device.
func Available() error { return available() }
