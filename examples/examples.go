// Package examples holds the SQL programs of the examples directory,
// embedded, so that commands (saber-hx nexmark) run them wherever the
// binary is: the YSB and SABER workload programs, and examples/nexmark's
// Nexmark queries.
package examples

import "embed"

// FS holds every *.sql file of the directory and of nexmark/, by its path
// there ("ysb.sql", "nexmark/q5.sql").
//
//go:embed *.sql nexmark/*.sql
var FS embed.FS
