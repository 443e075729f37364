package query

import (
	"errors"
	"fmt"
	"strings"
)

// Scalar is a value passed to or returned by a ScalarFunc.
type Scalar struct {
	Null bool
	I    int64   // an integer, a timestamp (ms since the epoch, UTC), a boolean (0 or 1)
	F    float64 // a float
	// S is a string. An argument's bytes are valid during the call only;
	// a result's are copied by the caller before the next call.
	S []byte
}

// ScalarFunc is a scalar function written in Go that SQL and queries call
// by name, as the built-in functions of Funcs (and Flink's CREATE FUNCTION
// name AS '...' binds it). Fn is called once per row, with an argument
// slice the caller reuses: it must not keep args, and should not allocate
// (it runs in the kernels' loops). A NULL argument makes the result NULL
// without a call, as for the built-in functions.
type ScalarFunc struct {
	Name   string
	Args   []ValueType // IntValue, FloatValue, StringValue, TimeValue or BoolValue
	Result ValueType
	Fn     func(args []Scalar) Scalar
}

// scalarFuncs are the registered functions, by lower-case name.
var scalarFuncs = map[string]ScalarFunc{}

// RegisterFunc makes f callable by its name (in any case) from SQL and in
// query.Call; an integer argument also takes a timestamp, and a float one
// an integer. Register before compiling the queries that call it (in an
// init function or main): registration is not safe alongside compiles. A
// name that is a built-in's or already registered is an error.
func RegisterFunc(f ScalarFunc) error {
	name := strings.ToLower(f.Name)
	switch {
	case name == "":
		return errors.New("query: RegisterFunc: a function needs a name")
	case f.Fn == nil:
		return fmt.Errorf("query: RegisterFunc %s: no Fn", f.Name)
	}
	if _, ok := Funcs[name]; ok {
		return fmt.Errorf("query: RegisterFunc %s: a function of that name exists", f.Name)
	}
	for i, t := range append([]ValueType{f.Result}, f.Args...) {
		switch t {
		case IntValue, FloatValue, StringValue, TimeValue, BoolValue:
		default:
			what := "its result"
			if i > 0 {
				what = fmt.Sprintf("argument %d", i)
			}
			return fmt.Errorf("query: RegisterFunc %s: %s is %s (valid: integer, float, string, timestamp, boolean)", f.Name, what, t)
		}
	}
	f.Name = name
	f.Args = append([]ValueType(nil), f.Args...)
	scalarFuncs[name] = f
	Funcs[name] = Func{Name: name, Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, len(f.Args), len(f.Args)); err != nil {
			return 0, err
		}
		for i, want := range f.Args {
			if got := a[i]; got != 0 && got != want && !(want == IntValue && got == TimeValue) && !(want == FloatValue && got.Integer()) {
				return 0, fmt.Errorf("%s: argument %d is %s, not %s", c, i+1, got, want)
			}
		}
		return f.Result, nil
	}, MayBeNull: true}
	return nil
}

// ScalarFuncOf returns the registered function called name (lower case).
func ScalarFuncOf(name string) (ScalarFunc, bool) {
	f, ok := scalarFuncs[name]
	return f, ok
}
