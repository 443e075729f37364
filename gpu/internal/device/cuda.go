//go:build cuda

package device

// The CUDA build: devices through gorgonia.org/cu. Importing cu runs its
// init, which calls cuInit and exits the process where that fails (no GPU,
// no driver): see the package comment.

import (
	"fmt"

	"gorgonia.org/cu"
)

const built = true

func devices() ([]Device, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("gpu: cuDeviceGetCount: %w", err)
	}
	devs := make([]Device, 0, n)
	for i := 0; i < n; i++ {
		d, err := describe(i)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// describe reads what Device holds of CUDA device ordinal i.
func describe(i int) (Device, error) {
	dev, err := cu.GetDevice(i)
	if err != nil {
		return Device{}, fmt.Errorf("gpu: cuDeviceGet(%d): %w", i, err)
	}
	name, err := dev.Name()
	if err != nil {
		return Device{}, fmt.Errorf("gpu: device %d: cuDeviceGetName: %w", i, err)
	}
	mem, err := dev.TotalMem()
	if err != nil {
		return Device{}, fmt.Errorf("gpu: device %d: cuDeviceTotalMem: %w", i, err)
	}
	attrs := []struct {
		a    cu.DeviceAttribute
		name string
	}{
		{cu.ComputeCapabilityMajor, "compute capability major"},
		{cu.ComputeCapabilityMinor, "compute capability minor"},
		{cu.PciDomainID, "PCI domain"},
		{cu.PciBusID, "PCI bus"},
		{cu.PciDeviceID, "PCI device"},
	}
	v := make([]int, len(attrs))
	for k, at := range attrs {
		if v[k], err = dev.Attribute(at.a); err != nil {
			return Device{}, fmt.Errorf("gpu: device %d: cuDeviceGetAttribute(%s): %w", i, at.name, err)
		}
	}
	bus := pciBusID(v[2], v[3], v[4])
	return Device{
		Index:        i,
		Name:         name,
		MemBytes:     mem,
		ComputeMajor: v[0],
		ComputeMinor: v[1],
		PCIBusID:     bus,
		NUMANode:     numaNodeOf(sysPCIDevices, bus),
	}, nil
}

func available() error {
	n, err := cu.NumDevices()
	if err != nil {
		return fmt.Errorf("gpu: cuDeviceGetCount: %w", err)
	}
	if n == 0 {
		return ErrNoDevice
	}
	return nil
}
