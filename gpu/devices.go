package gpu

import (
	"errors"
	"fmt"
	"io"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/gpu/internal/device"
)

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

// WriteDevices writes the GPUs for a reader (saber-hx topology): how many,
// and a line each, or why there are none.
func WriteDevices(w io.Writer) {
	devs, err := Devices()
	switch {
	case errors.Is(err, ErrNotBuilt):
		fmt.Fprintln(w, "GPUs: none (this build has no CUDA support)")
	case err != nil:
		fmt.Fprintf(w, "GPUs: unknown (%v)\n", err)
	case len(devs) == 0:
		fmt.Fprintln(w, "GPUs: none")
	default:
		fmt.Fprintf(w, "GPUs: %d\n", len(devs))
		for _, d := range devs {
			fmt.Fprintf(w, "  gpu %d: %s, sm_%d%d, memory %s, PCI %s, NUMA node %d\n",
				d.Index, d.Name, d.ComputeMajor, d.ComputeMinor, cpu.FormatBytes(d.MemBytes), d.PCIBusID, d.NUMANode)
		}
	}
}
