package source

import "bytes"

// indexNL is the position of the first '\n' in b, -1 if none.
func indexNL(b []byte) int { return bytes.IndexByte(b, '\n') }
