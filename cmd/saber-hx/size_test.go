package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandLineLines: cmd/saber-hx keeps flags, help, output formatting
// and exit codes, at most 2,075 lines of them (issue #24's 2,000, and the
// checks that refuse a flag the run would ignore: checkScope and its
// callers); the runtime lives in the packages that run it (pipeline, ysb,
// workloads, ...).
func TestCommandLineLines(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(b), "\n")
	}
	if lines > 2075 {
		t.Errorf("cmd/saber-hx has %d non-test lines, more than 2,075: move runtime logic to the packages that hold it", lines)
	}
}
