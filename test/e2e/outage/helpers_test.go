package outage

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/edge-mc/test/framework"
)

const converge = framework.Converge

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	syncTargets = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "synctargets"}
)

// conditionIs is a check for eventually: the object's condition of the given type has the
// given status.
func conditionIs(condType, status string) func(u *unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		if got, reason, _ := framework.ConditionStatus(u, condType); string(got) != status {
			return fmt.Sprintf("condition %s is %q (%s), want %s", condType, got, reason, status)
		}
		return ""
	}
}

var (
	setUp      = framework.NewFleet
	eventually = framework.EventuallyObject
	present    = framework.Present
	fieldIs    = framework.FieldIs
)
