package cpu

import (
	"bufio"
	"os"
	"strings"
)

// Model is the processor's model name as /proc/cpuinfo gives it ("AMD
// EPYC 7B13", "Intel(R) Xeon(R) ..."), for the summaries that report a
// measurement: figures are only comparable on one CPU. "" where unknown.
func Model() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
