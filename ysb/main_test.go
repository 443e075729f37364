package ysb

import (
	"os"
	"testing"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// TestMain runs the tests in a process that frees memory lazily
// (testenv.Main).
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
