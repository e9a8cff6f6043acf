package placementtranslator

import (
	"strings"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func ruleObject(kind, name string, generation int64, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "edge.kcp.io/v1alpha1", "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetGeneration(generation)
	u.SetAnnotations(map[string]string{logicalcluster.AnnotationKey: "ws"})
	return u
}

// A collector is compiled once per generation: a new generation is compiled again, and what a
// broken one says names the expression and where.
func TestRuleCompilerPerGeneration(t *testing.T) {
	var r ruleCompiler
	good := ruleObject("StatusCollector", "c", 1, map[string]any{"select": []any{map[string]any{"name": "a", "expression": "object.status.a"}}})
	if err := r.compile(statusCollectorsGVR.Resource, good); err != nil {
		t.Fatalf("a good collector: %v", err)
	}
	broken := ruleObject("StatusCollector", "c", 1, map[string]any{"select": []any{map[string]any{"name": "a", "expression": "object.status.a +"}}})
	if err := r.compile(statusCollectorsGVR.Resource, broken); err != nil {
		t.Errorf("the same generation is not compiled again, whatever it holds: %v", err)
	}
	broken.SetGeneration(2)
	err := r.compile(statusCollectorsGVR.Resource, broken)
	if err == nil || !strings.Contains(err.Error(), "spec.select[a]") || !strings.Contains(err.Error(), "object.status.a +") || !strings.Contains(err.Error(), "at 1:") {
		t.Errorf("generation 2: %v", err)
	}
	rule := ruleObject("HealthRule", "h", 1, map[string]any{"kind": "Widget", "ready": "object.status.phase"})
	if err := r.compile(healthRulesGVR.Resource, rule); err != nil {
		t.Errorf("a good health rule: %v", err)
	}
	r.forget(ruleKey{statusCollectorsGVR.Resource, "ws", "c"})
	if _, ok := r.memo[ruleKey{statusCollectorsGVR.Resource, "ws", "c"}]; ok {
		t.Error("forgotten, still remembered")
	}
}
