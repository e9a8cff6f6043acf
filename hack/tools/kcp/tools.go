//go:build tools

// Package tools pins the kcp server and apigen for `make tools`.
package tools

import (
	_ "github.com/kcp-dev/kcp/cmd/kcp"
	_ "github.com/kcp-dev/kcp/sdk/cmd/apigen"
)
