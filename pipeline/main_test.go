package pipeline

import (
	"os"
	"testing"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// TestMain runs the tests in a process that frees memory lazily
// (testenv.Main), more of them at once than there are cores: many wait
// on Kafka and Redis servers.
func TestMain(m *testing.M) { os.Exit(testenv.MainParallel(m, 4)) }
