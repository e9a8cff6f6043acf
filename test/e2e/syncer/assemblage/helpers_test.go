package assemblage

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/edge-mc/test/framework"
)

const converge = framework.Converge

var (
	configMaps    = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets       = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	namespaces    = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgets       = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	crds          = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	clusterRoles  = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	syncerConfigs = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "syncerconfigs"}
)

var (
	eventually = framework.EventuallyObject
	present    = framework.Present
	absent     = framework.Absent
	fieldIs    = framework.FieldIs
	fieldOf    = framework.FieldOf
	nestedInt  = framework.NestedInt
)

// objectID names an object at the edge.
type objectID struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}
