package security

import (
	"os"
	"testing"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// TestMain runs the tests in a process that frees memory lazily
// (testenv.Main), more of them at once than there are cores: a client
// meeting a plaintext server with TLS waits out the probe's timeout.
func TestMain(m *testing.M) { os.Exit(testenv.MainParallel(m, 8)) }
