//go:build tools

// Package tools pins krew in this module.
package tools

import _ "sigs.k8s.io/krew/cmd/krew"
