package workloads

import "github.com/saber-hx/saber-hx/query"

// WindowOverride replaces fields of a workload's window: saber-hx bench's
// --window-type, --window-size and --window-slide, which its errors name.
// Only the fields marked set replace the workload's.
type WindowOverride struct {
	Type                       string // "range" or "row"
	Size, Slide                int64  // > 0
	TypeSet, SizeSet, SlideSet bool
	// SizeTime and SlideTime: Size and Slide were given as durations (in
	// ms), which only a range window takes.
	SizeTime, SlideTime bool
}

// Given reports whether any field is set.
func (o WindowOverride) Given() bool { return o.TypeSet || o.SizeSet || o.SlideSet }

// Apply returns the workload's window w with the set fields replaced. A
// tumbling window stays tumbling when only its size is given (the slide
// follows the size); an explicit size or slide must be positive. Its
// errors are ErrUsage.
func (o WindowOverride) Apply(w query.Window) (query.Window, error) {
	if o.TypeSet {
		switch o.Type {
		case "range":
			w.Type = query.Range
		case "row":
			w.Type = query.Rows
		default:
			return w, usagef("--window-type %q: valid: range, row", o.Type)
		}
	}
	if w.Type == query.Rows && (o.SizeTime || o.SlideTime) {
		return w, usagef("--window-size and --window-slide of a row window are counts of tuples, not durations")
	}
	if o.SizeSet && o.Size <= 0 {
		return w, usagef("--window-size %d: must be positive", o.Size)
	}
	if o.SlideSet && o.Slide <= 0 {
		return w, usagef("--window-slide %d: must be positive", o.Slide)
	}
	tumbling := w.Slide == w.Size
	if o.SizeSet {
		w.Size = o.Size
		if tumbling && !o.SlideSet {
			w.Slide = o.Size
		}
	}
	if o.SlideSet {
		w.Slide = o.Slide
	}
	if err := w.Validate(); err != nil {
		if o.SizeSet && !o.SlideSet && w.Slide > w.Size {
			return w, usagef("%v: the workload's slide is %d; give --window-slide too", err, w.Slide)
		}
		return w, usageError{err}
	}
	return w, nil
}
