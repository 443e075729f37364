package gpu_test

import (
	"testing"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/gpu"
)

// Every Device is an engine.GPU (whatever the build: Open's CUDA device and
// the emulator are Devices), and every device that registers host memory
// an engine.GPUHostRegistrar, and a Program's Unpacker an
// engine.GPUUnpacker: the engine consumes devices through its own
// interfaces, without importing this package, and Program and JoinProgram
// are the very types of engine.GPUProgram and engine.GPUJoinProgram.
var (
	_ engine.GPU              = gpu.Device(nil)
	_ engine.GPUProgram       = gpu.Program(nil)
	_ engine.GPUJoinProgram   = gpu.JoinProgram(nil)
	_ engine.GPUHostRegistrar = gpu.HostRegistrar(nil)
	_ engine.GPUUnpacker      = gpu.Unpacker(nil)
)

// TestDeviceIsEngineGPU: the emulator, as the command line passes it to
// the engine, is a GPU and a GPUHostRegistrar, and TimingsOf still finds
// its timings through the engine's interface.
func TestDeviceIsEngineGPU(t *testing.T) {
	dev := gpu.NewEmulator()
	defer dev.Close()
	var g engine.GPU = dev
	if _, ok := g.(engine.GPUHostRegistrar); !ok {
		t.Error("the emulator is not an engine.GPUHostRegistrar")
	}
	if _, ok := gpu.TimingsOf(g); !ok {
		t.Error("TimingsOf(an engine.GPU holding the emulator): no timings")
	}
	if g.Name() != "emulator" {
		t.Errorf("Name %q", g.Name())
	}
}
