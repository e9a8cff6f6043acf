package syncer

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

const converge = framework.Converge

var (
	configMaps    = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets       = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	services      = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	namespaces    = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgets       = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	crds          = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	clusterRoles  = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	syncTargets   = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "synctargets"}
	syncerConfigs = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "syncerconfigs"}
)

var (
	setUp      = framework.NewFleet
	eventually = framework.EventuallyObject
	present    = framework.Present
	absent     = framework.Absent
	fieldIs    = framework.FieldIs
	fieldOf    = framework.FieldOf
	nestedInt  = framework.NestedInt
)

// placementAssemblage is the name of the assemblage of the fleet's workload workspace's
// placement in a mailbox.
func placementAssemblage(t *testing.T, f *framework.Fleet, placement string) string {
	t.Helper()
	return transport.AssemblageName(logicalClusterOf(t, f.WMW), placement)
}

// objectReported waits until the assemblage's status reports the object with the given key, and
// check, given its state, says nothing is wrong.
func objectReported(t *testing.T, mailbox dynamic.Interface, assemblage, key string, check func(o *edgev1alpha1.ObjectState) string) {
	t.Helper()
	framework.EventuallyAssemblage(t, mailbox, assemblage, func(a *edgev1alpha1.Assemblage) string {
		if a == nil {
			return "absent"
		}
		o := framework.ObjectStateOf(a, key)
		if o == nil {
			return "its status does not report " + key
		}
		if why := check(o); why != "" {
			return fmt.Sprintf("%s: %s", key, why)
		}
		return ""
	})
}
