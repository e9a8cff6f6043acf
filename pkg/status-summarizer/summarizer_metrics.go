package statussummarizer

import (
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
)

// metricPlacementConditions counts the EdgePlacements in the controller's cache by condition:
// rollouts progressing, waiting at a gate, stalled or complete, placements ready or not.
var metricPlacementConditions = controllerkit.NewConditionCounts("placement_conditions",
	"EdgePlacements by the type, status and reason of their conditions (Ready, Progressing, RolloutStalled, RolloutComplete, ...), served by the replica that leads.")

func init() { legacyregistry.CustomMustRegister(metricPlacementConditions) }
