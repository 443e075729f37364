package kafkasink

import (
	"os"
	"testing"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// The tests mostly wait on their brokers (each its own kfake cluster) and
// run in parallel, more of them at once than there are cores.
func TestMain(m *testing.M) { os.Exit(testenv.MainParallel(m, 16)) }
