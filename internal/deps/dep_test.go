package deps_test

import (
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The layering of the module, as the README's Architecture section draws
// it: query and window at the bottom; kernels (with kernels/cuda),
// scheduler, buffer, cpu and gpu (with its device layer, gpu/internal/device)
// above them; engine, the glue, above those but the GPU's (gpu), which it
// consumes through interfaces of its own (engine.GPU) and cmd/saber-hx wires
// in; ysb, workloads and cmd/saber-hx on top. Each rule is checked on the
// package graph that `go list` reports (non-test files), without build tags
// and with -tags cuda, in the manner of CockroachDB's colexec dep_test.go.

const mod = "github.com/saber-hx/saber-hx/"

// pkg is one package as go list sees it.
type pkg struct {
	imports []string // direct imports
	deps    []string // every package it depends on, transitively
	cgo     []string // its cgo files
}

// graphs are the graphs go list gave, by build tags: one go list each
// for the package's tests (which only read them), not one a test.
var graphs struct {
	sync.Mutex
	byTags map[string]map[string]pkg
}

// graph lists every package of the module under the build tags.
func graph(t *testing.T, tags string) map[string]pkg {
	t.Helper()
	graphs.Lock()
	defer graphs.Unlock()
	if g, ok := graphs.byTags[tags]; ok {
		return g
	}
	g := list(t, tags)
	if graphs.byTags == nil {
		graphs.byTags = map[string]map[string]pkg{}
	}
	graphs.byTags[tags] = g
	return g
}

// list runs go list for graph.
func list(t *testing.T, tags string) map[string]pkg {
	t.Helper()
	// -e: a package that does not build (a file being edited) is listed
	// with what go list could read, not a failure of every rule here; its
	// build fails on its own.
	args := []string{"list", "-e", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}|{{join .Deps \",\"}}|{{join .CgoFiles \",\"}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, mod+"...")...)
	// With cgo off, go list leaves out the files that import "C" (the
	// cuda build's): list them as a cuda build would see them.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	g := map[string]pkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		g[strings.TrimPrefix(f[0], mod)] = pkg{imports: split(f[1]), deps: split(f[2]), cgo: split(f[3])}
	}
	if len(g) == 0 {
		t.Fatal("go list: no package")
	}
	return g
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// own is the module's packages among paths, without the module prefix.
func own(paths []string) []string {
	var o []string
	for _, p := range paths {
		if rel, ok := strings.CutPrefix(p, mod); ok {
			o = append(o, rel)
		}
	}
	return o
}

// forEachTags runs f on the graph without tags and with -tags cuda.
func forEachTags(t *testing.T, f func(t *testing.T, g map[string]pkg)) {
	for _, tags := range []string{"", "cuda"} {
		name := "notags"
		if tags != "" {
			name = tags
		}
		t.Run(name, func(t *testing.T) { f(t, graph(t, tags)) })
	}
}

// need returns package p of g, failing the test if it is not there (a
// renamed package: the rule must follow it).
func need(t *testing.T, g map[string]pkg, p string) pkg {
	t.Helper()
	pk, ok := g[p]
	if !ok {
		t.Fatalf("no package %s%s: update the rule", mod, p)
	}
	return pk
}

// TestReferenceImportsOnlyQuery: the oracle shares no code with what it
// checks (window's pane arithmetic, the kernels, the engine) but the query
// it evaluates.
func TestReferenceImportsOnlyQuery(t *testing.T) {
	forEachTags(t, func(t *testing.T, g map[string]pkg) {
		for _, d := range own(need(t, g, "reference").deps) {
			if d != "query" {
				t.Errorf("reference depends on %s: it may depend on no saber-hx package but query", d)
			}
		}
	})
}

// TestKernelsBelowEngine: the kernels are the processors' code; the
// scheduler and the engine call them, never the reverse.
func TestKernelsBelowEngine(t *testing.T) {
	forEachTags(t, func(t *testing.T, g map[string]pkg) {
		for _, d := range own(need(t, g, "kernels").deps) {
			if d == "engine" || d == "scheduler" {
				t.Errorf("kernels depends on %s: it may depend on neither engine nor scheduler", d)
			}
		}
	})
}

// aboveEngine are the packages that may depend on engine: the programs
// and front ends built on it. workloads does through ysb (SABER's
// workloads reuse its campaign tables); sql compiles a SQL text into the
// engine's Specs; metrics reads a running engine's counters. The
// connectors (source, source/kafka, sink, sink/kafka, sink/redis) stay
// below it: they move bytes and rows, and pipeline (or ysb) wires them to
// a stream. A new package on top of the engine joins this list; one
// below it (what the engine uses, or could) must not.
var aboveEngine = []string{"engine", "ysb", "workloads", "sql", "metrics", "pipeline", "nexmark/bench", "cmd/saber-hx"}

// TestNothingBelowEngineImportsIt: engine is the glue of the packages it
// uses (scheduler, cpu, buffer, kernels, query, window, gpu); none
// of those, nor any package but the programs on top, depends on it.
func TestNothingBelowEngineImportsIt(t *testing.T) {
	forEachTags(t, func(t *testing.T, g map[string]pkg) {
		need(t, g, "engine")
		for _, p := range slices.Sorted(maps.Keys(g)) {
			if slices.Contains(own(g[p].deps), "engine") && !slices.Contains(aboveEngine, p) {
				t.Errorf("%s depends on engine: only %s may", p, strings.Join(aboveEngine[1:], ", "))
			}
		}
	})
}

const cu = "gorgonia.org/cu"

// TestCUDAOnlyWithTag: gorgonia.org/cu's init exits the process where no
// GPU is present, and the default build needs no cgo (CGO_ENABLED=0 go
// build ./... works): without -tags cuda no package depends on it, and no
// package has a cgo file.
func TestCUDAOnlyWithTag(t *testing.T) {
	g := graph(t, "")
	for _, p := range slices.Sorted(maps.Keys(g)) {
		pk := g[p]
		if slices.Contains(pk.deps, cu) {
			t.Errorf("%s depends on %s without the cuda build tag: keep every import of it behind //go:build cuda", p, cu)
		}
		if len(pk.cgo) > 0 {
			t.Errorf("%s has cgo files without the cuda build tag (%s): the default build needs no cgo", p, strings.Join(pk.cgo, ", "))
		}
	}
	// With the tag, the device layer and the processor that uses it do:
	// the rule above must not hold by accident of an empty graph.
	gc := graph(t, "cuda")
	for _, p := range []string{"gpu/internal/device", "gpu"} {
		if !slices.Contains(need(t, gc, p).deps, cu) {
			t.Errorf("with -tags cuda %s does not depend on %s: update this test", p, cu)
		}
	}
}

// gpuPackages are the GPU's: the processor that runs plans on a device,
// its device layer, the CUDA kernels and the CUDA binding.
var gpuPackages = []string{mod + "gpu", mod + "gpu/internal/device", mod + "kernels/cuda", cu}

// dependsOn returns those of banned that package p of g depends on,
// directly or not.
func dependsOn(t *testing.T, g map[string]pkg, p string, banned []string) []string {
	t.Helper()
	deps := need(t, g, p).deps
	var found []string
	for _, b := range banned {
		if slices.Contains(deps, b) {
			found = append(found, strings.TrimPrefix(b, mod))
		}
	}
	return found
}

// TestEngineImportsNoGPUPackage: engine depends on no GPU package, directly
// or not, with or without -tags cuda. It consumes a device through
// interfaces of its own (engine.GPU, GPUProgram, GPUJoinProgram,
// GPUHostRegistrar), which package gpu's devices satisfy; cmd/saber-hx opens
// the device and passes it in (Config.GPU).
func TestEngineImportsNoGPUPackage(t *testing.T) {
	forEachTags(t, func(t *testing.T, g map[string]pkg) {
		if found := dependsOn(t, g, "engine", gpuPackages); len(found) > 0 {
			t.Errorf("engine depends on %s: it depends on no GPU package (%s); consume the device through engine.GPU",
				strings.Join(found, ", "), strings.ReplaceAll(strings.Join(gpuPackages, ", "), mod, ""))
		}
		// The GPU is still wired in above the engine: the rule must not
		// hold by accident of a graph without gpu.
		if !slices.Contains(need(t, g, "cmd/saber-hx").deps, mod+"gpu") {
			t.Errorf("cmd/saber-hx no longer depends on gpu: who opens the GPU? update this test")
		}
	})
}

// schedulerBanned are what the scheduler must not know: windows and
// results (window), the kernels, the ring (buffer), and the engine.
var schedulerBanned = []string{mod + "window", mod + "kernels", mod + "buffer", mod + "engine"}

// TestSchedulerKnowsOnlyTasks: the scheduler is about tasks, processor
// kinds and policies: a task's result and its ingestion are the engine's
// (its task record holds them around a scheduler.Task), so the scheduler
// depends on none of window, kernels, buffer or engine, directly or not.
func TestSchedulerKnowsOnlyTasks(t *testing.T) {
	forEachTags(t, func(t *testing.T, g map[string]pkg) {
		if found := dependsOn(t, g, "scheduler", schedulerBanned); len(found) > 0 {
			t.Errorf("scheduler depends on %s: it knows tasks, kinds and policies, not %s",
				strings.Join(found, ", "), strings.ReplaceAll(strings.Join(schedulerBanned, ", "), mod, ""))
		}
	})
}

// TestRulesCanFail: the rules' check reports a package that breaks them,
// on a graph where engine imports gpu (as it imported the GPU processor
// before engine.GPU), one where it reaches the device layer through another
// package, and one where the
// scheduler imports window (the state before the engine's task record).
func TestRulesCanFail(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    map[string]pkg
		want []string
	}{
		{"direct", map[string]pkg{"engine": {imports: []string{mod + "gpu"}, deps: []string{mod + "gpu", mod + "gpu/internal/device", mod + "kernels/cuda", mod + "query"}}},
			[]string{"gpu", "gpu/internal/device", "kernels/cuda"}},
		{"indirect", map[string]pkg{"engine": {imports: []string{mod + "cpu"}, deps: []string{mod + "cpu", mod + "gpu/internal/device"}}},
			[]string{"gpu/internal/device"}},
		{"clean", map[string]pkg{"engine": {imports: []string{mod + "query"}, deps: []string{mod + "query"}}}, nil},
	} {
		got := dependsOn(t, tc.g, "engine", gpuPackages)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: dependsOn = %v, want %v", tc.name, got, tc.want)
		}
	}
	// The scheduler as it was, its Task carrying a window.TaskResult.
	old := map[string]pkg{"scheduler": {imports: []string{mod + "window"}, deps: []string{mod + "query", mod + "window"}}}
	if got := dependsOn(t, old, "scheduler", schedulerBanned); !slices.Equal(got, []string{"window"}) {
		t.Errorf("scheduler importing window: dependsOn = %v, want [window]", got)
	}
}

// cmdBanned are what the command line leaves to package pipeline: the
// runtime of a program (its checkpoints, connectors and retries).
var cmdBanned = []string{mod + "checkpoint", mod + "source/kafka", mod + "sink/kafka", mod + "sink/redis", mod + "internal/retry"}

// TestCommandLineIsThin: cmd/saber-hx holds flags, help, output and exit
// codes; it imports none of the runtime's packages (it may depend on them
// through pipeline).
func TestCommandLineIsThin(t *testing.T) {
	forEachTags(t, func(t *testing.T, g map[string]pkg) {
		for _, imp := range need(t, g, "cmd/saber-hx").imports {
			if slices.Contains(cmdBanned, imp) {
				t.Errorf("cmd/saber-hx imports %s: the program's runtime is package pipeline's; wire it there", strings.TrimPrefix(imp, mod))
			}
		}
		if !slices.Contains(need(t, g, "cmd/saber-hx").imports, mod+"pipeline") {
			t.Errorf("cmd/saber-hx does not import pipeline: who runs a program? update this test")
		}
	})
}
