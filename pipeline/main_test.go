package pipeline

import (
	"os"
	"testing"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// TestMain runs the tests in a process that frees memory lazily
// (testenv.Main), parallelTests of them at once.
func TestMain(m *testing.M) { os.Exit(testenv.MainParallel(m, parallelTests)) }
