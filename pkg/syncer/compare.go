package syncer

import (
	"reflect"
)

// containsAll reports whether every field of want is in have with the same value: maps are
// compared key by key (have may hold more keys, e.g. defaults the server filled in), lists
// element by element (equal lengths; each element of want contained in have's), and scalars by
// value, numbers of any Go numeric type compared as numbers. It tells whether someone changed,
// at the edge, a field the syncer applied.
func containsAll(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			hv, found := h[k]
			if !found {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !containsAll(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(h) != len(w) {
			return false
		}
		for i := range w {
			if !containsAll(h[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return isEmpty(have)
	}
	if wi, ok := want.(int64); ok {
		if hi, ok := have.(int64); ok {
			return hi == wi // exactly: large integers do not survive a float64
		}
	}
	if wn, ok := asFloat(want); ok {
		hn, ok := asFloat(have)
		return ok && hn == wn
	}
	return reflect.DeepEqual(have, want)
}

// isEmpty reports whether v is what a server drops or omits: nil, an empty map or an empty list.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}

// equalIgnoring reports whether a and b are equal apart from their top-level fields skip and the
// metadata that every write changes (resourceVersion, managedFields, generation).
func equalIgnoring(a, b map[string]any, skip ...string) bool {
	strip := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		for _, k := range skip {
			delete(out, k)
		}
		if md, ok := out["metadata"].(map[string]any); ok {
			c := make(map[string]any, len(md))
			for k, v := range md {
				c[k] = v
			}
			delete(c, "resourceVersion")
			delete(c, "managedFields")
			delete(c, "generation")
			out["metadata"] = c
		}
		return out
	}
	return reflect.DeepEqual(strip(a), strip(b))
}
