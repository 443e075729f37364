package cpu

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestModel(t *testing.T) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil || !strings.Contains(string(b), "model name") {
		t.Skip("no model name in /proc/cpuinfo")
	}
	m := Model()
	assert.NotEmpty(t, m)
	assert.Contains(t, string(b), "model name\t: "+m)
}
