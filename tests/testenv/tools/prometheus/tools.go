//go:build tools

// Package tools pins the upstream main packages built by tests/testenv/build-tools.sh.
// It is never compiled; it only makes `go mod tidy` keep the requirements.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
