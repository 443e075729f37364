package source

import (
	"io"
	"os"
	"syscall"
	"time"
)

// ReadDeadliner is a reader whose blocked Read a deadline can end (an
// *os.File on a pipe, a FIFO or a socket that the runtime polls; a
// net.Conn): a source stops reading it on cancellation by setting its read
// deadline to now.
type ReadDeadliner interface {
	SetReadDeadline(t time.Time) error
}

// Pollable returns a reader of the same data as r whose blocked Read a
// deadline can end, where r is an *os.File on a pipe or a FIFO that the
// runtime does not poll (os.Stdin inherited in blocking mode): a duplicate
// of its descriptor in non-blocking mode, polled. restore closes the
// duplicate and puts the descriptor back in blocking mode. Anything else
// (a terminal, a regular file, a reader that is no file) is returned as it
// is: its blocked Read ends with its data.
func Pollable(r io.Reader) (io.Reader, func()) {
	f, ok := r.(*os.File)
	if !ok {
		return r, func() {}
	}
	if err := f.SetReadDeadline(time.Time{}); err == nil {
		return r, func() {} // already polled
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return r, func() {}
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return r, func() {}
	}
	var dup int
	var dupErr error
	if err := rc.Control(func(fd uintptr) { dup, dupErr = syscall.Dup(int(fd)) }); err != nil || dupErr != nil {
		return r, func() {}
	}
	// O_NONBLOCK belongs to the open file description, which the duplicate
	// shares with f: set here, cleared by restore.
	if err := syscall.SetNonblock(dup, true); err != nil {
		_ = syscall.Close(dup)
		return r, func() {}
	}
	syscall.CloseOnExec(dup)
	nf := os.NewFile(uintptr(dup), f.Name()) // non-blocking: polled, deadlines work
	return nf, func() {
		_ = syscall.SetNonblock(dup, false)
		_ = nf.Close()
	}
}
