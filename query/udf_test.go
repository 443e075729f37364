package query

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegisterFunc(t *testing.T) {
	id := func(a []Scalar) Scalar { return a[0] }
	require.NoError(t, RegisterFunc(ScalarFunc{Name: "Query_Test_Twice", Args: []ValueType{IntValue}, Result: IntValue,
		Fn: func(a []Scalar) Scalar { return Scalar{I: 2 * a[0].I} }}))
	f, ok := ScalarFuncOf("query_test_twice")
	require.True(t, ok)
	assert.Equal(t, int64(6), f.Fn([]Scalar{{I: 3}}).I)
	ty, err := TypeOf(Call{Fn: "query_test_twice", Args: []Expr{Int(1)}}, nil)
	require.NoError(t, err)
	assert.Equal(t, IntValue, ty)
	_, err = TypeOf(Call{Fn: "query_test_twice", Args: []Expr{Str("x")}}, nil)
	assert.ErrorContains(t, err, "argument 1 is string, not integer")
	_, err = TypeOf(Call{Fn: "query_test_twice", Args: []Expr{Int(1), Int(2)}}, nil)
	assert.ErrorContains(t, err, "takes 1 arguments, not 2")

	for _, c := range []struct {
		f   ScalarFunc
		err string
	}{
		{ScalarFunc{Name: "query_test_twice", Fn: id}, "a function of that name exists"},
		{ScalarFunc{Name: "UPPER", Fn: id}, "a function of that name exists"},
		{ScalarFunc{Name: "", Fn: id}, "needs a name"},
		{ScalarFunc{Name: "query_test_nofn"}, "no Fn"},
		{ScalarFunc{Name: "query_test_bytes", Args: []ValueType{BytesValue}, Result: IntValue, Fn: id}, "argument 1 is bytes"},
		{ScalarFunc{Name: "query_test_none", Fn: id}, "its result is value-type(0)"},
	} {
		assert.ErrorContains(t, RegisterFunc(c.f), c.err, c.f.Name)
	}
}
