package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/pipeline"
)

func TestPinFlag(t *testing.T) {
	t.Parallel()
	cpus := len(cpu.AllowedCPUs())
	cases := []struct {
		args    []string
		workers int
		want    bool
	}{
		{nil, cpus / 2, cpus > 1}, // auto: at most half the CPUs
		{nil, cpus/2 + 1, false},  // auto: more than half
		{nil, cpus, false},
		{[]string{"--pin"}, cpus, true}, // a bare --pin is true
		{[]string{"--pin=true"}, cpus, true},
		{[]string{"--pin=false"}, 1, false},
		{[]string{"--pin=auto"}, cpus + 1, false},
	}
	for _, tc := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f engineFlags
		f.register(fs)
		require.NoError(t, fs.Parse(tc.args))
		assert.Equal(t, tc.want, pipeline.PinWorkers(string(f.pin), tc.workers), "%v with %d workers on %d CPUs", tc.args, tc.workers, cpus)
	}
}
