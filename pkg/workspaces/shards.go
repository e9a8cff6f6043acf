package workspaces

import (
	"context"
	"crypto/sha256"
	"math/big"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ShardAnnotation is the annotation in which kcp records, on a Workspace, the shard that holds
// its logical cluster, as ShardHash of the shard's name.
const ShardAnnotation = "internal.tenancy.kcp.io/shard"

// ShardHash is how kcp names a shard in ShardAnnotation: the SHA-224 of the shard's name read as
// a big-endian number, written in base 36 (lower case, one leading 0 for each leading zero
// byte), cut to its first 8 characters. ("root" gives 1pfxsevk.)
func ShardHash(name string) string {
	sum := sha256.Sum224([]byte(name))
	s := new(big.Int).SetBytes(sum[:]).Text(36)
	for _, b := range sum {
		if b != 0 {
			break
		}
		s = "0" + s
	}
	if len(s) > 8 {
		s = s[:8]
	}
	return s
}

// ShardOf returns the name of the shard that holds the workspace at path, from its Workspace's
// ShardAnnotation and the Shards of root. It returns "" when that is not worth saying or cannot
// be known: the center has a single shard, the Shards of root or the Workspace cannot be read
// (kcp lets only its admins read Shards, by default), or no Shard has that hash.
func ShardOf(ctx context.Context, kcp kcpclientset.ClusterInterface, path logicalcluster.Path) string {
	shards, err := kcp.Cluster(core.RootCluster.Path()).CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{})
	if err != nil || len(shards.Items) < 2 {
		return ""
	}
	parent, name := path.Split()
	ws, err := kcp.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	hash := ws.Annotations[ShardAnnotation]
	for _, s := range shards.Items {
		if hash != "" && ShardHash(s.Name) == hash {
			return s.Name
		}
	}
	return ""
}
