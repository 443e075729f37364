module github.com/saber-hx/saber-hx

go 1.26.0

require (
	github.com/klauspost/cpuid/v2 v2.3.0
	github.com/stretchr/testify v1.11.1
	golang.org/x/sys v0.50.0
	gorgonia.org/cu v0.9.6
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/google/uuid v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
