package cli

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func TestParseLabelArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    labelChanges
		wantErr string // substring of the error; "" for none
	}{
		{name: "none", args: nil, want: labelChanges{Set: map[string]string{}}},
		{
			name: "pairs",
			args: []string{"env=prod", "example.com/region=eu-west", "empty="},
			want: labelChanges{Set: map[string]string{"env": "prod", "example.com/region": "eu-west", "empty": ""}},
		},
		{
			name: "removals sorted and deduplicated",
			args: []string{"zone-", "env=prod", "example.com/a-", "zone-"},
			want: labelChanges{Set: map[string]string{"env": "prod"}, Remove: []string{"example.com/a", "zone"}},
		},
		{name: "value ending in dash is a value", args: []string{"a=b-"}, wantErr: `the value "b-" is not valid`},
		{name: "same pair twice", args: []string{"a=b", "a=b"}, want: labelChanges{Set: map[string]string{"a": "b"}}},
		{name: "missing =", args: []string{"env"}, wantErr: `"env" is not a label argument: write key=value`},
		{name: "bad key", args: []string{"Bad Key=x"}, wantErr: `label "Bad Key=x": the key "Bad Key" is not valid`},
		{name: "bad key prefix", args: []string{"UPPER.example/x=1"}, wantErr: `the key "UPPER.example/x" is not valid`},
		{name: "empty key", args: []string{"=x"}, wantErr: `the key "" is not valid`},
		{name: "bad removal key", args: []string{"-"}, wantErr: `label "-": the key "" is not valid`},
		{name: "bad value", args: []string{"env=no spaces"}, wantErr: `label "env=no spaces": the value "no spaces" is not valid`},
		{name: "value too long", args: []string{"env=" + strings.Repeat("a", 64)}, wantErr: "must be no more than 63"},
		{name: "set and removed", args: []string{"env=prod", "env-"}, wantErr: "both set and removed"},
		{name: "removed and set", args: []string{"env-", "env=prod"}, wantErr: "both set and removed"},
		{name: "two values", args: []string{"env=prod", "env=dev"}, wantErr: `given two values, "prod" and "dev"`},
		{name: "reserved key", args: []string{"edge.kcp.io/synctarget=x"}, wantErr: "set by kubectl edge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLabelArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestLabelChangesApply(t *testing.T) {
	existing := map[string]string{"keep": "1", "change": "old", "drop": "x"}
	c := labelChanges{Set: map[string]string{"change": "new", "add": "2"}, Remove: []string{"drop", "absent"}}
	got := c.apply(existing)
	want := map[string]string{"keep": "1", "change": "new", "add": "2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if existing["drop"] != "x" || existing["change"] != "old" {
		t.Errorf("apply modified its argument: %v", existing)
	}
}

func TestSetLabels(t *testing.T) {
	tests := []struct {
		name       string
		before     map[string]string
		after      map[string]string
		wantChange string
		wantLabels bool // whether metadata.labels is present afterwards
	}{
		{name: "same", before: map[string]string{"a": "1"}, after: map[string]string{"a": "1"}, wantLabels: true},
		{name: "none to none", before: nil, after: map[string]string{}},
		{name: "add change drop", before: map[string]string{"a": "1", "b": "2"}, after: map[string]string{"a": "9", "c": "3"},
			wantChange: "labels ~a=9 -b +c=3", wantLabels: true},
		{name: "drop the last", before: map[string]string{"a": "1"}, after: map[string]string{}, wantChange: "labels -a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetLabels(tt.before)
			if got := setLabels(u, tt.after); got != tt.wantChange {
				t.Errorf("change = %q, want %q", got, tt.wantChange)
			}
			_, has, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "labels")
			if has != tt.wantLabels {
				t.Errorf("metadata.labels present = %v, want %v (%v)", has, tt.wantLabels, u.Object)
			}
		})
	}
}

func TestValidateLocationName(t *testing.T) {
	for name, ok := range map[string]bool{
		"edge-1":                 true,
		"edge.eu-west.1":         true,
		strings.Repeat("a", 63):  true,
		strings.Repeat("a", 64):  false, // a valid subdomain, but not a label value
		"Edge-1":                 false,
		"edge_1":                 false,
		"-edge":                  false,
		"":                       false,
		"edge-1.":                false,
		"root:imw":               false,
		"edge 1":                 false,
		"\u00e9dge":              false,
		strings.Repeat("a.", 40): false,
	} {
		err := validateLocationName(name)
		if (err == nil) != ok {
			t.Errorf("validateLocationName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestEnsureLocation(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		syncTargetsGVR: "SyncTargetList",
		locationsGVR:   "LocationList",
	})
	inv := &inventoryClients{
		path:        logicalcluster.NewPath("root:imw"),
		syncTargets: client.Resource(syncTargetsGVR),
		locations:   client.Resource(locationsGVR),
	}
	ctx := context.Background()
	steps := []struct {
		name       string
		args       []string
		wantOut    string
		wantWrites int
		wantLabels map[string]string // on the Location; the SyncTarget has edge.kcp.io/synctarget too
		mode       string            // --push or --pull: the SyncTarget's edge.kcp.io/sync-mode, not the Location's
	}{
		{name: "create", args: []string{"env=prod", "region=eu"}, wantWrites: 2,
			wantOut:    "synctarget edge-1 created\nlocation edge-1 created\n",
			wantLabels: map[string]string{"env": "prod", "region": "eu"}},
		{name: "again", args: []string{"env=prod", "region=eu"}, wantWrites: 0,
			wantOut:    "synctarget edge-1 unchanged\nlocation edge-1 unchanged\n",
			wantLabels: map[string]string{"env": "prod", "region": "eu"}},
		{name: "no labels keeps them", wantWrites: 0,
			wantOut:    "synctarget edge-1 unchanged\nlocation edge-1 unchanged\n",
			wantLabels: map[string]string{"env": "prod", "region": "eu"}},
		{name: "merge", args: []string{"tier=gold", "region-"}, wantWrites: 2,
			wantOut:    "synctarget edge-1 updated (labels -region +tier=gold)\nlocation edge-1 updated (labels -region +tier=gold)\n",
			wantLabels: map[string]string{"env": "prod", "tier": "gold"}},
		{name: "push", mode: edgev1alpha1.SyncModePush, wantWrites: 1,
			wantOut:    "synctarget edge-1 updated (labels +edge.kcp.io/sync-mode=push, edge kubeconfig)\nlocation edge-1 unchanged\n",
			wantLabels: map[string]string{"env": "prod", "tier": "gold"}},
		{name: "push kept", wantWrites: 0,
			wantOut:    "synctarget edge-1 unchanged\nlocation edge-1 unchanged\n",
			wantLabels: map[string]string{"env": "prod", "tier": "gold"}},
		{name: "pull", mode: edgev1alpha1.SyncModePull, wantWrites: 1,
			wantOut:    "synctarget edge-1 updated (labels ~edge.kcp.io/sync-mode=pull, edge kubeconfig)\nlocation edge-1 unchanged\n",
			wantLabels: map[string]string{"env": "prod", "tier": "gold"}},
	}
	mode := ""
	for _, step := range steps {
		client.ClearActions()
		changes, err := parseLabelArgs(step.args)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if step.mode != "" {
			mode = step.mode
		}
		hash := ""
		if step.mode == edgev1alpha1.SyncModePush {
			hash = "abc"
		}
		if err := ensureLocation(ctx, inv, "edge-1", changes, step.mode, hash, &out); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if out.String() != step.wantOut {
			t.Errorf("%s: said %q, want %q", step.name, out.String(), step.wantOut)
		}
		writes := 0
		for _, a := range client.Actions() {
			if a.GetVerb() != "get" {
				writes++
			}
		}
		if writes != step.wantWrites {
			t.Errorf("%s: %d writes, want %d: %v", step.name, writes, step.wantWrites, client.Actions())
		}
		loc, err := inv.locations.Get(ctx, "edge-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(loc.GetLabels(), step.wantLabels) {
			t.Errorf("%s: Location labels %v, want %v", step.name, loc.GetLabels(), step.wantLabels)
		}
		st, err := inv.syncTargets.Get(ctx, "edge-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.GetLabels()[edgev1alpha1.LabelSyncTarget] != "edge-1" || st.GetLabels()[edgev1alpha1.LabelSyncMode] != mode {
			t.Errorf("%s: SyncTarget labels %v", step.name, st.GetLabels())
		}
		// The Location's selector selects its SyncTarget.
		var typed edgev1alpha1.Location
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(loc.Object, &typed); err != nil {
			t.Fatal(err)
		}
		sel, err := metav1.LabelSelectorAsSelector(typed.Spec.InstanceSelector.AsMetav1())
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(st.GetLabels())) {
			t.Errorf("%s: the Location's instanceSelector %v does not select the SyncTarget %v (%v)", step.name, sel, st.GetLabels(), err)
		}
	}
}

type stubDiscovery struct {
	discovery.DiscoveryInterface
	list *metav1.APIResourceList
	err  error
}

func (s stubDiscovery) ServerResourcesForGroupVersion(string) (*metav1.APIResourceList, error) {
	return s.list, s.err
}

func TestCheckInventoryWorkspace(t *testing.T) {
	path := logicalcluster.NewPath("root:imw")
	served := func(names ...string) *metav1.APIResourceList {
		l := &metav1.APIResourceList{}
		for _, n := range names {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: n})
		}
		return l
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("access denied"))
	exists := func(b bool, err error) func() (bool, error) { return func() (bool, error) { return b, err } }
	tests := []struct {
		name    string
		disco   stubDiscovery
		exists  func() (bool, error)
		wantErr string
	}{
		{name: "inventory", disco: stubDiscovery{list: served("locations", "synctargets", "edgeplacements")}},
		// kcp v0.28.1 answers an empty list for a group that the workspace does not bind.
		{name: "empty list", disco: stubDiscovery{list: served()}, wantErr: `does not bind the edge.kcp.io API, so it cannot hold Locations and SyncTargets: run "kubectl edge ensure imw root:imw"`},
		{name: "404", disco: stubDiscovery{err: apierrors.NewNotFound(schema.GroupResource{}, "")}, wantErr: "does not bind the edge.kcp.io API"},
		{name: "partial", disco: stubDiscovery{list: served("locations")}, wantErr: "does not serve both"},
		{name: "missing workspace", disco: stubDiscovery{err: forbidden}, exists: exists(false, nil),
			wantErr: `workspace root:imw does not exist: create it with "kubectl edge ensure imw root:imw"`},
		{name: "forbidden", disco: stubDiscovery{err: forbidden}, exists: exists(false, forbidden),
			wantErr: "does not exist, or you may not use it"},
		{name: "other", disco: stubDiscovery{err: errors.New("connection refused")}, wantErr: "reaching workspace root:imw: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.exists == nil {
				tt.exists = exists(true, nil)
			}
			err := checkInventoryWorkspace(tt.disco, tt.exists, path, "kubectl edge ensure imw root:imw")
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}
