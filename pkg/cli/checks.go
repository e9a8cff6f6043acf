package cli

import (
	"context"
	"fmt"

	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkESPW tells the user to run init when the ESPW does not serve the exports a verb needs,
// rather than leaving an APIBinding that never binds.
func checkESPW(ctx context.Context, kcp kcpclientset.ClusterInterface, espw logicalcluster.Path, exportNames []string) error {
	for _, name := range exportNames {
		_, err := kcp.Cluster(espw).ApisV1alpha2().APIExports().Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			return fmt.Errorf("the edge service provider workspace %s does not serve the APIExport %s (%v): run \"kubectl edge init --espw %s\" first", espw, name, err, espw)
		default:
			return fmt.Errorf("reading APIExport %s in %s: %w", name, espw, err)
		}
	}
	return nil
}
