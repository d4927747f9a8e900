//go:build tools

// Package tools pins the upstream main packages built by tests/testenv/build.sh.
// It is never compiled; it only makes `go mod tidy` keep the requirements.
package tools

import (
	_ "github.com/fluxcd/source-controller"
)
