// Package syncer tests edge-syncer end to end: a real kcp with edge-controller-manager, and
// edge-syncer processes syncing into real edge clusters: logical clusters of a second kcp, and a
// real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
// with a kwok node, so that a Deployment gets Running, Ready pods from the real controllers.
//
// The tests here place workloads from a workload workspace through the whole pipeline
// (scheduler, placement translator, status summarizer); package assemblage beside it tests the
// syncer on assemblages written by the test itself.
package syncer

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
