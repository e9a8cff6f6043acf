//go:build tools

// Package tools pins kwok for `make tools`.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
