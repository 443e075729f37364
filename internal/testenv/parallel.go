package testenv

import (
	"flag"
	"strconv"
	"testing"
)

// MainParallel runs m (a package's TestMain: os.Exit(MainParallel(m, n)))
// with at least n of its parallel tests at once, unless -test.parallel
// was given. The default, GOMAXPROCS, is 2 on a 2-core machine: right for
// tests that keep the cores busy, but it queues tests that mostly wait
// (on a server's outage, a client's backoff, a process's timeout) behind
// each other. A package whose parallel tests mostly wait calls this. It
// runs m as Main does (memory freed lazily).
func MainParallel(m *testing.M, n int) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			set = true
		}
	})
	if f := flag.Lookup("test.parallel"); !set && f != nil {
		if cur, err := strconv.Atoi(f.Value.String()); err == nil && cur < n {
			_ = f.Value.Set(strconv.Itoa(n))
		}
	}
	return Main(m)
}
