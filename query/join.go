package query

import (
	"errors"
	"fmt"
)

// Join side prefixes: a window join's predicate and output name the left
// stream's attributes "l.<name>" and the right's "r.<name>".
const (
	LeftPrefix  = "l."
	RightPrefix = "r."
)

// WindowJoin is a theta-join of two streams over their windows: for every
// window w (the same definition applied to each stream: event time for
// range windows, each stream's own tuple index for row windows), every pair
// of a left tuple and a right tuple of w for which Where holds is output as
// one tuple: the left tuple's bytes followed by the right's. A pair repeats
// in every window that holds both tuples (sliding windows).
//
// Lateness is judged per stream, by the rule of aggregations: a tuple is
// late, and joins nothing, when the first window containing it was already
// closed by that stream's watermark (minus Window.Delay). A window is joined
// once both streams' watermarks minus Window.Delay have reached its end, or
// at the end of the input.
//
// With Regular set it is instead a regular join (Flink's inner join of two
// append-only streams, without a window): every pair of a left tuple and a
// right tuple whose keys LeftKey and RightKey are equal, neither NULL, is
// output once, when the later of the two arrives, whatever their event
// times. Both sides' tuples are kept for ever (Flink's regular join without
// a state TTL): its memory grows with its inputs. Window is then the zero
// Window, and Where nil (one-side terms filter the inputs upstream; other
// terms are not supported).
type WindowJoin struct {
	Name        string
	Left, Right *Schema
	Window      Window
	Where       Expr // over l.* and r.* attributes; nil joins every pair

	Regular bool
	// LeftKey and RightKey are a regular join's key attributes (indexes
	// into Left.Attrs and Right.Attrs): of one type, Int32, Int64 or
	// String (strings equal byte for byte).
	LeftKey, RightKey int
}

// Scope resolves "l.<name>" and "r.<name>".
func (j *WindowJoin) Scope() Scope {
	return SchemaScope(j.OutputSchemaUnchecked())
}

// Validate refuses a join that cannot run.
func (j *WindowJoin) Validate() error {
	if err := j.validate(); err != nil {
		return fmt.Errorf("join %q: %w", j.Name, err)
	}
	return nil
}

func (j *WindowJoin) validate() error {
	if j.Left == nil || j.Right == nil {
		return errors.New("needs a left and a right schema")
	}
	if j.Regular {
		return j.validateRegular()
	}
	if err := j.Window.Validate(); err != nil {
		return err
	}
	return predicate("where", j.Where, j.Scope())
}

// OutputSchema is the schema of the joined tuples: the left attributes as
// l.<name>, then the right ones as r.<name>, at their offsets shifted by the
// left tuple's size. Attribute 0 is the left event time.
func (j *WindowJoin) OutputSchema() (*Schema, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	return j.OutputSchemaUnchecked(), nil
}

// OutputSchemaUnchecked is OutputSchema for a join known to be valid.
func (j *WindowJoin) OutputSchemaUnchecked() *Schema {
	s := &Schema{TupleSize: j.Left.TupleSize + j.Right.TupleSize}
	for _, a := range j.Left.Attrs {
		a.Name = LeftPrefix + a.Name
		s.Attrs = append(s.Attrs, a)
	}
	for _, a := range j.Right.Attrs {
		a.Name = RightPrefix + a.Name
		a.Offset += j.Left.TupleSize
		if a.Nullable {
			a.NullBit += 8 * j.Left.TupleSize
		}
		s.Attrs = append(s.Attrs, a)
	}
	return s
}

// validateRegular checks a regular join's keys, and that it has no window
// and no WHERE.
func (j *WindowJoin) validateRegular() error {
	switch {
	case j.Window != (Window{}):
		return errors.New("a regular join has no window")
	case j.Where != nil:
		return errors.New("a regular join joins on its keys alone: filter each side before it")
	case j.LeftKey < 0 || j.LeftKey >= len(j.Left.Attrs):
		return fmt.Errorf("left key %d: the left schema has %d attributes", j.LeftKey, len(j.Left.Attrs))
	case j.RightKey < 0 || j.RightKey >= len(j.Right.Attrs):
		return fmt.Errorf("right key %d: the right schema has %d attributes", j.RightKey, len(j.Right.Attrs))
	}
	l, r := j.Left.Attrs[j.LeftKey], j.Right.Attrs[j.RightKey]
	switch {
	case l.Type != Int32 && l.Type != Int64 && l.Type != String:
		return fmt.Errorf("left key %s is %s: a regular join's key is an int32, an int64 or a string", l.Name, l.Type)
	case r.Type != l.Type:
		return fmt.Errorf("keys %s (%s) and %s (%s): a regular join's keys are of one type", l.Name, l.Type, r.Name, r.Type)
	}
	return nil
}
