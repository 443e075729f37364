package nexmark

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// SideInputRows is the number of rows of the side input that Nexmark's
// q13 joins: the project's side_input_gen.sh writes 10,000.
const SideInputRows = 10000

// WriteSideInput writes the side input of q13 to path as the project's
// SideInputGenerator does: rows lines "i,i" (a key and its decimal
// text), i from 0, so that a lookup of any id modulo rows finds one.
func WriteSideInput(path string, rows int) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriter(f)
	var b []byte
	for i := range rows {
		b = strconv.AppendInt(b[:0], int64(i), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// FlinkHome makes a temporary directory laid out as the project's
// queries expect ${FLINK_HOME} to be: data/side_input.txt, the side
// input of SideInputRows rows. The caller removes it (os.RemoveAll).
func FlinkHome() (dir string, err error) {
	dir, err = os.MkdirTemp("", "saber-hx-nexmark-")
	if err != nil {
		return "", err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if err := WriteSideInput(filepath.Join(data, "side_input.txt"), SideInputRows); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
