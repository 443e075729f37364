package redissink

import (
	"os"
	"testing"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// The tests mostly wait on their servers (each its own redis-server) and
// on the client's dial retries while one is down, and run in parallel,
// more of them at once than there are cores.
func TestMain(m *testing.M) { os.Exit(testenv.MainParallel(m, 16)) }
