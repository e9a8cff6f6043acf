package placementtranslator

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func memoObject(cluster, uid, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAnnotations(map[string]string{"kcp.io/cluster": cluster})
	u.SetUID(types.UID(uid))
	u.SetResourceVersion(rv)
	return u
}

func TestVersionMemo(t *testing.T) {
	m := newVersionMemo[int](2)
	computed := 0
	get := func(u *unstructured.Unstructured) int {
		return m.get(u, func() int { computed++; return computed })
	}
	steps := []struct {
		name         string
		obj          *unstructured.Unstructured
		want         int
		wantComputed int
	}{
		{"first read of a version computes", memoObject("c1", "a", "1"), 1, 1},
		{"the same version again does not", memoObject("c1", "a", "1"), 1, 1},
		{"a new version computes again", memoObject("c1", "a", "2"), 2, 2},
		{"and is remembered in place of the old", memoObject("c1", "a", "2"), 2, 2},
		{"the same UID in another logical cluster is another object", memoObject("c2", "a", "2"), 3, 3},
		{"an object without a resourceVersion is never remembered", memoObject("c1", "b", ""), 4, 4},
		{"nor is it the second time", memoObject("c1", "b", ""), 5, 5},
		{"past the size the least recently used goes (c1/a)", memoObject("c3", "x", "1"), 6, 6},
		{"so c1/a is computed again", memoObject("c1", "a", "2"), 7, 7},
	}
	for _, s := range steps {
		if got := get(s.obj); got != s.want || computed != s.wantComputed {
			t.Fatalf("%s: got value %d after %d computations, want %d after %d", s.name, got, computed, s.want, s.wantComputed)
		}
	}

	var none *versionMemo[int]
	if got := none.get(memoObject("c1", "a", "1"), func() int { return 42 }); got != 42 {
		t.Errorf("a nil memo returned %d, want the computed 42", got)
	}
}
