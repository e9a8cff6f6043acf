//go:build tools

// Package tools pins the kcp server, front-proxy, cache server and apigen for `make tools`.
package tools

import (
	_ "github.com/kcp-dev/kcp/cmd/cache-server"
	_ "github.com/kcp-dev/kcp/cmd/kcp"
	_ "github.com/kcp-dev/kcp/cmd/kcp-front-proxy"
	_ "github.com/kcp-dev/sdk/cmd/apigen"
)
