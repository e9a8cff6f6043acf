package outage

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/edge-mc/test/framework"
)

const converge = framework.Converge

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

var (
	setUp      = framework.NewFleet
	eventually = framework.EventuallyObject
	present    = framework.Present
	fieldIs    = framework.FieldIs
)
