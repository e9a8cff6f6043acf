package transport

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Key names an object independently of its version: <resource>.<group>/<namespace>/<name>,
// without the group for the core group and without the namespace for a cluster-scoped object.
// Resource names hold no dot, and object names no slash, so a key parses back (ParseKey).
type Key struct {
	Group, Resource, Namespace, Name string
}

// KeyOf is the key of the named object of a resource.
func KeyOf(gr schema.GroupResource, namespace, name string) Key {
	return Key{Group: gr.Group, Resource: gr.Resource, Namespace: namespace, Name: name}
}

// GroupResource is the key's resource.
func (k Key) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.Group, Resource: k.Resource}
}

// String is the key's text.
func (k Key) String() string {
	var b strings.Builder
	b.WriteString(k.GroupResource().String())
	if k.Namespace != "" {
		b.WriteString("/" + k.Namespace)
	}
	b.WriteString("/" + k.Name)
	return b.String()
}

// ParseKey is the inverse of Key.String; ok is false for text that no key has.
func ParseKey(s string) (k Key, ok bool) {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 2:
		k.Name = parts[1]
	case 3:
		k.Namespace, k.Name = parts[1], parts[2]
	default:
		return Key{}, false
	}
	gr := schema.ParseGroupResource(parts[0])
	if gr.Resource == "" || k.Name == "" || (len(parts) == 3 && k.Namespace == "") {
		return Key{}, false
	}
	k.Group, k.Resource = gr.Group, gr.Resource
	return k, true
}
