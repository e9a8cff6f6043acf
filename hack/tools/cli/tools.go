//go:build tools

// Package tools pins the kcp kubectl plugins for `make tools`.
package tools

import (
	_ "github.com/kcp-dev/kcp/cli/cmd/kubectl-kcp"
	_ "github.com/kcp-dev/kcp/cli/cmd/kubectl-ws"
)
