//go:build tools

// Package tools pins the upstream main package built by tests/testenv/build-tools.sh.
// It is never compiled; it only makes `go mod tidy` keep the requirements.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
