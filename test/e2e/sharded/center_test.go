package sharded

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestCenterHasTwoShards checks the harness itself: root lists both shards, and a workspace made
// through the front-proxy answers there.
func TestCenterHasTwoShards(t *testing.T) {
	t.Parallel()
	c := framework.ShardedKCP(t)
	s := framework.KCP(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shards, err := s.KCP.Cluster(rootPath).CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the Shards in root through the front-proxy %s: %v", c.ProxyURL, err)
	}
	var names []string
	for _, sh := range shards.Items {
		names = append(names, sh.Name+"="+sh.Spec.BaseURL)
	}
	t.Logf("shards: %v", names)
	if len(shards.Items) != 2 {
		t.Fatalf("root lists %d Shards (%v), want 2", len(shards.Items), names)
	}
	ws := framework.NewWorkspace(t)
	// A fresh deadline: making the workspace can take most of a minute on a loaded machine, and
	// the first one ran out while the workspace, not the listing, was being made (CI, stop 45).
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.KubeClient(t, ws).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("listing ConfigMaps in %s through the front-proxy: %v", ws, err)
	}
}
