package projection

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/placement-translator/customize"
)

func TestCustomizationMessageNamesTheCustomizerAndTheFix(t *testing.T) {
	cz := &edgev1alpha1.Customizer{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}}
	for _, tt := range []struct {
		err  error
		want []string
	}{
		{&customize.Error{Replacement: 2, Path: "$.spec.x[3]", Msg: "index 3 is out of range"},
			[]string{"customising deployments.apps/app/web with Customizer app/web: replacement 2 ($.spec.x[3]): index 3 is out of range", "fix that replacement"}},
		{&customize.Error{Replacement: 1, Path: "$.spec.image", Key: "zone", Msg: "not a label"},
			[]string{"with Customizer app/web", `unknown parameter "zone"`, `label or annotate the destination's SyncTarget or Location with "zone", or change %(zone)`}},
		{&customize.Error{Path: "data.region", Key: "zone", Msg: "not a label"},
			[]string{"customising deployments.apps/app/web: unknown parameter \"zone\" in data.region", `with "zone"`}},
	} {
		got := customizationMessage("deployments.apps/app/web", cz, tt.err)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("message %q lacks %q", got, w)
			}
		}
		if tt.err.(*customize.Error).Replacement == 0 && strings.Contains(got, "Customizer app/web") {
			t.Errorf("message %q blames the Customizer for the object's own %%(key)", got)
		}
	}
}
