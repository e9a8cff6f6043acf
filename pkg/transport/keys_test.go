package transport

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestKeys(t *testing.T) {
	tests := []struct {
		key  Key
		text string
	}{
		{Key{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}, "deployments.apps/ns/web"},
		{Key{Resource: "configmaps", Namespace: "ns", Name: "cfg"}, "configmaps/ns/cfg"},
		{Key{Resource: "namespaces", Name: "ns"}, "namespaces/ns"},
		{Key{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "widgets.example.com"}, "customresourcedefinitions.apiextensions.k8s.io/widgets.example.com"},
	}
	for _, tt := range tests {
		if got := tt.key.String(); got != tt.text {
			t.Errorf("%+v.String() = %q, want %q", tt.key, got, tt.text)
		}
		if got, ok := ParseKey(tt.text); !ok || got != tt.key {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", tt.text, got, ok, tt.key)
		}
	}
	if k := KeyOf(schema.GroupResource{Group: "apps", Resource: "deployments"}, "ns", "web"); k != tests[0].key {
		t.Errorf("KeyOf = %+v", k)
	}
	for _, bad := range []string{"", "configmaps", "configmaps//x", "/ns/x", "configmaps/ns/", "a/b/c/d"} {
		if k, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) = %+v, want not ok", bad, k)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"deployments.apps/ns/web", "namespaces/ns", "configmaps//x", "a.b.c/d/e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, ok := ParseKey(s)
		if !ok {
			return
		}
		// A parsed key prints back to what parses to the same key.
		again, ok := ParseKey(k.String())
		if !ok || again != k {
			t.Fatalf("ParseKey(%q) = %+v, whose text %q parses to %+v, %v", s, k, k.String(), again, ok)
		}
	})
}

func TestNames(t *testing.T) {
	if got := AssemblageName("2x8k1n", "web"); got != "2x8k1n.web" {
		t.Errorf("AssemblageName = %q", got)
	}
	long := ""
	for len(long) < 253 {
		long += "abcdefghij"
	}
	long = long[:253]
	a, b := AssemblageName("2x8k1n", long), AssemblageName("2x8k1n", long[:252]+"z")
	if len(PartName(a, 9999)) > 253 || a == b {
		t.Errorf("long names: %q (%d) and %q", a, len(a), b)
	}
	if _, _, ok := ParseMailboxName(MailboxName("inv", "u-1")); !ok {
		t.Errorf("mailbox names do not parse back")
	}
	if LabelValue("short") != "short" || len(LabelValue(long)) > 63 {
		t.Errorf("LabelValue")
	}
}
