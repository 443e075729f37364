package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestStarted: Config.Started sees the engine Start returns, running, once.
func TestStarted(t *testing.T) {
	parallel(t)
	var seen []*Engine
	q := &query.Query{Name: "sel", Schema: testSchema(t), Where: query.ColLt("kind", 3)}
	eng, err := Start(Config{Workers: 1, Started: func(e *Engine) {
		seen = append(seen, e)
		assert.Equal(t, []string{"sel"}, e.StreamNames())
	}}, []Spec{{Query: q, Tuples: func([]byte) error { return nil }}})
	require.NoError(t, err)
	assert.Equal(t, []*Engine{eng}, seen)
	_, err = eng.CloseAll()
	require.NoError(t, err)
}
