//go:build cuda

package gpu

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/saber-hx/saber-hx/gpu/internal/device"
)

type devBuf struct {
	p    cu.DevicePtr
	size int64
}

type pinnedBuf struct {
	b    []byte
	free func() error
}

// ensure makes b hold at least n bytes (reallocating, with headroom, when it
// does not), without keeping its contents.
func (b *devBuf) ensure(n int64, what string) error {
	n = max(n, 8)
	if b.size >= n {
		return nil
	}
	if err := b.release(what); err != nil {
		return err
	}
	n += n / 4
	p, err := cu.MemAlloc(n)
	if err != nil {
		return fmt.Errorf("cuMemAlloc(%d) for %s: %w", n, what, err)
	}
	b.p, b.size = p, n
	return nil
}

func (b *devBuf) release(what string) error {
	if b.size == 0 {
		return nil
	}
	err := cu.MemFree(b.p)
	b.p, b.size = 0, 0
	if err != nil {
		return fmt.Errorf("cuMemFree (%s): %w", what, err)
	}
	return nil
}

// upload allocates b for s's words and copies them (synchronously: once
// per program).
func (b *devBuf) upload(s any, what string) error {
	var ptr unsafe.Pointer
	var n int64
	switch v := s.(type) {
	case []uint64:
		if len(v) > 0 {
			ptr, n = unsafe.Pointer(&v[0]), int64(len(v))*8
		}
	case []int32:
		if len(v) > 0 {
			ptr, n = unsafe.Pointer(&v[0]), int64(len(v))*4
		}
	default:
		panic(fmt.Sprintf("gpu: upload of %T", s))
	}
	if err := b.ensure(n, what); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := cu.MemcpyHtoD(b.p, ptr, n); err != nil {
		return fmt.Errorf("cuMemcpyHtoD (%s, %d bytes): %w", what, n, err)
	}
	return nil
}

func (b *pinnedBuf) ensure(n int64, what string) error {
	n = max(n, 8)
	if int64(len(b.b)) >= n {
		return nil
	}
	if err := b.release(what); err != nil {
		return err
	}
	n += n / 4
	n = (n + 7) &^ 7
	m, free, err := device.AllocPinned(int(n))
	if err != nil {
		return fmt.Errorf("pinned staging for %s: %w", what, err)
	}
	b.b, b.free = m, free
	return nil
}

func (b *pinnedBuf) release(what string) error {
	if b.free == nil {
		return nil
	}
	err := b.free()
	b.b, b.free = nil, nil
	if err != nil {
		return fmt.Errorf("freeing pinned staging for %s: %w", what, err)
	}
	return nil
}

// words views a pinned buffer (8-byte aligned: cuMemHostAlloc) as words.
func (b *pinnedBuf) words(n int64) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b.b[0])), n)
}
