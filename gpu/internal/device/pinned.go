//go:build cuda

package device

// Page-locked (pinned) host memory. Asynchronous host<->device copies
// (cuMemcpyHtoDAsync / DtoHAsync on a stream) overlap with kernels and with
// other copies only when the host memory is page-locked; from pageable
// memory the driver stages through its own buffer and the copy is
// synchronous. SABER's pipeline (several tasks in flight on separate
// streams) needs that overlap. gorgonia.org/cu v0.9.6 has cuMemFreeHost but
// no call to allocate or register page-locked memory, hence this small cgo
// shim over cuMemHostRegister / cuMemHostUnregister / cuMemHostAlloc /
// cuMemFreeHost.
//
// The driver calls need a current context. Each shim call makes the
// primary context of device 0 current for the duration of the call (push,
// call, pop, all in one cgo call, so on one OS thread) and registers or
// allocates with the PORTABLE flag, which makes the memory page-locked for
// every context, of every device, not only that one.

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stddef.h>

static CUresult saber_primary_ctx(CUcontext *ctx) {
	CUdevice dev;
	CUresult r = cuDeviceGet(&dev, 0);
	if (r != CUDA_SUCCESS) return r;
	return cuDevicePrimaryCtxRetain(ctx, dev);
}

// saber_in_ctx brackets one driver call with pushing and popping ctx; the
// call's error wins over the pop's.
#define SABER_IN_CTX(ctx, call) do { \
	CUresult r_ = cuCtxPushCurrent(ctx); \
	if (r_ != CUDA_SUCCESS) return r_; \
	CUresult rc_ = (call); \
	CUcontext popped_; \
	r_ = cuCtxPopCurrent(&popped_); \
	return rc_ != CUDA_SUCCESS ? rc_ : r_; \
} while (0)

static CUresult saber_host_register(CUcontext ctx, void *p, size_t n) {
	SABER_IN_CTX(ctx, cuMemHostRegister(p, n, CU_MEMHOSTREGISTER_PORTABLE));
}

static CUresult saber_host_unregister(CUcontext ctx, void *p) {
	SABER_IN_CTX(ctx, cuMemHostUnregister(p));
}

static CUresult saber_host_alloc(CUcontext ctx, void **p, size_t n) {
	SABER_IN_CTX(ctx, cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE));
}

static CUresult saber_free_host(CUcontext ctx, void *p) {
	SABER_IN_CTX(ctx, cuMemFreeHost(p));
}

static const char *saber_error_name(CUresult r) {
	const char *s = NULL;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == NULL) return "CUDA_ERROR_UNKNOWN_CODE";
	return s;
}

static const char *saber_error_string(CUresult r) {
	const char *s = NULL;
	if (cuGetErrorString(r, &s) != CUDA_SUCCESS || s == NULL) return "unknown error code";
	return s;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// CUDAError is a failed CUDA driver call made by this package's shim.
type CUDAError struct {
	Op   string // the driver call, for example "cuMemHostRegister"
	Code int    // its CUresult
	Name string // for example "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"
	Msg  string // the driver's description
}

func (e *CUDAError) Error() string {
	return fmt.Sprintf("gpu: %s: %s (%d): %s", e.Op, e.Name, e.Code, e.Msg)
}

func cudaErr(op string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return &CUDAError{Op: op, Code: int(r), Name: C.GoString(C.saber_error_name(r)), Msg: C.GoString(C.saber_error_string(r))}
}

var primary struct {
	once sync.Once
	ctx  C.CUcontext
	err  error
}

// primaryCtx retains device 0's primary context once, for the life of the
// process (so that the pinned memory it owns outlives any caller).
func primaryCtx() (C.CUcontext, error) {
	primary.once.Do(func() {
		primary.err = cudaErr("cuDevicePrimaryCtxRetain(device 0)", C.saber_primary_ctx(&primary.ctx))
	})
	return primary.ctx, primary.err
}

// PinHostMemory page-locks b's memory (cuMemHostRegister, portable to every
// context) so that asynchronous copies from and to it overlap with other
// work. b should be memory outside the Go heap (an mmap'ed region, as the
// engine's ring buffers are); memory from the Go heap works, since Go does
// not move heap objects, but the caller must keep it reachable until
// UnpinHostMemory. The same range may not be registered twice.
func PinHostMemory(b []byte) error {
	if len(b) == 0 {
		return errors.New("gpu: PinHostMemory: empty buffer")
	}
	ctx, err := primaryCtx()
	if err != nil {
		return err
	}
	return cudaErr("cuMemHostRegister", C.saber_host_register(ctx, unsafe.Pointer(unsafe.SliceData(b)), C.size_t(len(b))))
}

// UnpinHostMemory undoes PinHostMemory; b must start where the pinned
// range started.
func UnpinHostMemory(b []byte) error {
	if len(b) == 0 {
		return errors.New("gpu: UnpinHostMemory: empty buffer")
	}
	ctx, err := primaryCtx()
	if err != nil {
		return err
	}
	return cudaErr("cuMemHostUnregister", C.saber_host_unregister(ctx, unsafe.Pointer(unsafe.SliceData(b))))
}

// AllocPinned allocates n bytes of page-locked host memory (cuMemHostAlloc,
// portable to every context), outside the Go heap. The returned function
// frees it (cuMemFreeHost); it may be called more than once, but the slice
// must not be used after the first call.
func AllocPinned(n int) ([]byte, func() error, error) {
	if n <= 0 {
		return nil, nil, fmt.Errorf("gpu: AllocPinned(%d): size must be positive", n)
	}
	ctx, err := primaryCtx()
	if err != nil {
		return nil, nil, err
	}
	var p unsafe.Pointer
	if err := cudaErr("cuMemHostAlloc", C.saber_host_alloc(ctx, &p, C.size_t(n))); err != nil {
		return nil, nil, fmt.Errorf("gpu: AllocPinned(%d): %w", n, err)
	}
	var once sync.Once
	var ferr error
	free := func() error {
		once.Do(func() { ferr = cudaErr("cuMemFreeHost", C.saber_free_host(ctx, p)) })
		return ferr
	}
	return unsafe.Slice((*byte)(p), n), free, nil
}
