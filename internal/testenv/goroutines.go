package testenv

import (
	"runtime"
	"testing"
	"time"
)

// NoGoroutinesLeft waits up to 5 s for the goroutine count to come back
// to before (taken with runtime.NumGoroutine before what is tested
// started its goroutines), and fails t with every goroutine's stack where
// it does not: what a test stopped left nothing behind. It polls by hand:
// testify's Eventually runs its condition on a goroutine of its own.
func NoGoroutinesLeft(t testing.TB, before int) {
	t.Helper()
	n := runtime.NumGoroutine()
	for i := 0; i < 500 && n > before; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	if n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left (%d before):\n%s", n-before, before, buf[:runtime.Stack(buf, true)])
	}
}
