package device

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// sysPCIDevices is where Linux lists PCI devices; a variable for tests.
var sysPCIDevices = "/sys/bus/pci/devices"

// pciBusID formats a PCI address as sysfs names it: lower-case hex,
// "dddd:bb:dd.f". CUDA reports a GPU's domain, bus and device; its
// function is 0.
func pciBusID(domain, bus, device int) string {
	return fmt.Sprintf("%04x:%02x:%02x.0", domain, bus, device)
}

// numaNodeOf reads the NUMA node of the PCI device busID from
// dir/<busID>/numa_node: -1 where the file is missing or unreadable, or
// where the kernel itself says -1 (a machine without NUMA).
func numaNodeOf(dir, busID string) int {
	if busID == "" {
		return -1
	}
	b, err := os.ReadFile(filepath.Join(dir, strings.ToLower(busID), "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}
