package gpu

import "github.com/saber-hx/saber-hx/gpu/internal/device"

// The device layer (gpu/internal/device: device listing, page-locked
// memory, the CUDA bindings) stays internal to the processor; these are
// the parts the command line needs to say which GPUs there are and whether
// a GPU mode can start.

// DeviceInfo describes one GPU (Device is the processor's interface).
type DeviceInfo = device.Device

// ErrNotBuilt is returned by every entry point of a build without CUDA; its
// text says how to make a build with it.
var ErrNotBuilt = device.ErrNotBuilt

// ErrNoDevice is returned by Available in a CUDA build that finds no device.
var ErrNoDevice = device.ErrNoDevice

// Built reports whether this binary was built with CUDA support (the
// `cuda` build tag).
func Built() bool { return device.Built() }

// Devices lists the GPUs this build can use, in CUDA ordinal order.
func Devices() ([]DeviceInfo, error) { return device.Devices() }

// Available reports whether GPU processors can be started, and why not:
// ErrNotBuilt without CUDA, ErrNoDevice where there is no device.
func Available() error { return device.Available() }
