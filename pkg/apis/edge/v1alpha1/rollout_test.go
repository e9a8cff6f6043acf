package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestPaces(t *testing.T) {
	two := intstr.FromInt32(2)
	for _, tt := range []struct {
		name string
		r    *RolloutStrategy
		want bool
	}{
		{"no strategy", nil, false},
		{"empty", &RolloutStrategy{}, false},
		{"soak time and deadline only", &RolloutStrategy{MinReadySeconds: 10, ProgressDeadlineSeconds: ptr.To[int32](60)}, false},
		{"zero jitter", &RolloutStrategy{Jitter: &metav1.Duration{}}, false},
		{"maxInFlight", &RolloutStrategy{MaxInFlight: &two}, true},
		{"maxFailures", &RolloutStrategy{MaxFailures: &two}, true},
		{"paused", &RolloutStrategy{Paused: true}, true},
		{"jitter", &RolloutStrategy{Jitter: &metav1.Duration{Duration: time.Minute}}, true},
		{"stages", &RolloutStrategy{Stages: []RolloutStage{{Name: "canary"}}}, true},
	} {
		if got := tt.r.Paces(); got != tt.want {
			t.Errorf("%s: Paces() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
