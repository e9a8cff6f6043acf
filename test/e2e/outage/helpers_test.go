package outage

import (
	"fmt"
	"strings"

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
	placements  = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "edgeplacements"}
)

// summaryCounts is a check for eventually: the EdgePlacement's status.summary has count
// destinations in state (a field of DestinationCounts), and, if reason is not empty, a broken
// entry whose reason contains it.
func summaryCounts(state string, count int64, reason string) func(u *unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		summary, found, _ := unstructured.NestedMap(u.Object, "status", "summary")
		if !found {
			return "no summary yet"
		}
		if got, _, _ := unstructured.NestedInt64(summary, state); got != count {
			return fmt.Sprintf("summary %v: %s is %d, want %d", summary, state, got, count)
		}
		if reason == "" {
			return ""
		}
		broken, _, _ := unstructured.NestedSlice(u.Object, "status", "broken")
		for _, b := range broken {
			if m, ok := b.(map[string]any); ok && strings.Contains(fmt.Sprint(m["reason"]), reason) {
				return ""
			}
		}
		return fmt.Sprintf("no broken entry says %q: %v", reason, broken)
	}
}

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
