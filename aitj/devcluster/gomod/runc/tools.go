//go:build tools

// Package tools pins the runc this module builds for real nodes.
package tools

import _ "github.com/opencontainers/runc"
