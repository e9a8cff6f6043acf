package sharded

import "github.com/kcp-dev/logicalcluster/v3"

var rootPath = logicalcluster.NewPath("root")
