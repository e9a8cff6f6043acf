// Package customize customises a workload object for one destination (an edge cluster's mailbox
// workspace) before the placement translator writes it there.
//
// Customisation has two steps, both applied to the object's unstructured content:
//
//  1. The replacements of the object's Customizer, in order. Each sets the value at a JSONPath;
//     string leaves of the value undergo %(key) expansion.
//  2. If the object has the annotation edge.kcp.io/expand-parameters: "true", %(key) expansion in
//     every string leaf of the object, except apiVersion, kind, metadata.name, metadata.namespace,
//     that annotation itself, and strings already written (and expanded) by a replacement.
//
// %(key) expands to the value of the label or annotation named key of the destination's
// SyncTarget or Location (see Parameters.Lookup); %% is a literal %.
package customize

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/json"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// Parameters are what %(key) expands to at one destination.
type Parameters struct {
	SyncTargetLabels, LocationLabels, SyncTargetAnnotations, LocationAnnotations map[string]string
}

// Lookup looks key up in SyncTarget labels, then Location labels, then SyncTarget annotations,
// then Location annotations, and returns the first value found.
func (p Parameters) Lookup(key string) (string, bool) {
	for _, m := range []map[string]string{p.SyncTargetLabels, p.LocationLabels, p.SyncTargetAnnotations, p.LocationAnnotations} {
		if v, ok := m[key]; ok {
			return v, true
		}
	}
	return "", false
}

// notFound is the Msg of an Error about an unknown parameter key.
const notFound = "not a label or annotation of the SyncTarget or the Location"

// Error is a customisation failure that a user must fix.
type Error struct {
	// Replacement is the position, counting from 1, of the failing replacement in the
	// Customizer's replacements; 0 when the failure is in the expansion of the object's strings.
	Replacement int
	// Path is the JSONPath of the failing replacement, or the field path of the string leaf
	// (e.g. spec.template.spec.containers[0].env[1].value) whose expansion failed.
	Path string
	// Key is the parameter key, if the problem is an unknown key.
	Key string
	// Msg describes the problem, without its location.
	Msg string
}

// Error says what went wrong and where.
func (e *Error) Error() string {
	msg := e.Msg
	if e.Key != "" {
		msg = fmt.Sprintf("unknown parameter %q (%s)", e.Key, e.Msg)
	}
	switch {
	case e.Replacement > 0:
		return fmt.Sprintf("replacement %d (%s): %s", e.Replacement, e.Path, msg)
	case e.Path == "":
		return msg
	case e.Key != "":
		return fmt.Sprintf("unknown parameter %q in %s (%s)", e.Key, e.Path, e.Msg)
	default:
		return e.Path + ": " + msg
	}
}

// Apply customises obj in place for one destination: first every replacement of customizer (which
// may be nil) in order, then, if obj has the annotation edge.kcp.io/expand-parameters: "true"
// (after the replacements), %(key) expansion in every string leaf. It returns the first problem
// as an *Error; obj is then in an unspecified state, so callers should work on a copy.
func Apply(obj map[string]any, customizer *edgev1alpha1.Customizer, params Parameters) error {
	if obj == nil {
		return &Error{Msg: "no object to customise"}
	}
	// Field paths whose subtrees the object-wide expansion leaves alone.
	skip := map[string]bool{"apiVersion": true, "kind": true, "metadata.name": true, "metadata.namespace": true,
		joinKey("metadata.annotations", edgev1alpha1.AnnotationExpandParameters): true}
	if customizer != nil {
		for i, r := range customizer.Replacements {
			written, err := replace(obj, r, params)
			if err != nil {
				e, ok := err.(*Error)
				if !ok {
					e = &Error{Msg: err.Error()}
				}
				e.Replacement, e.Path = i+1, r.Path
				return e
			}
			skip[written] = true // already expanded; expanding again would undo %%
		}
	}
	if !wantsExpansion(obj) {
		return nil
	}
	if _, err := expandTree(obj, "", skip, params); err != nil {
		return err
	}
	return nil
}

// Expand expands %(key) in s; an unknown key is an *Error naming the key.
func Expand(s string, params Parameters) (string, error) {
	r, err := expand(s, params)
	if err != nil {
		return "", err
	}
	return r, nil
}

func expand(s string, params Parameters) (string, *Error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '%':
			b.WriteByte('%')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				return "", &Error{Msg: fmt.Sprintf("unterminated %%( at offset %d of %q", i, s)}
			}
			key := s[i+2 : i+2+end]
			if key == "" {
				return "", &Error{Msg: fmt.Sprintf("empty parameter name %%() at offset %d of %q", i, s)}
			}
			v, ok := params.Lookup(key)
			if !ok {
				return "", &Error{Key: key, Msg: notFound}
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte('%')
		}
	}
	return b.String(), nil
}

// expandTree expands the string leaves of v, which has field path path, in place (maps and lists)
// or by returning the expanded value (strings). Subtrees at paths in skip are left alone; map keys
// are visited in sorted order so that the first problem reported is deterministic.
func expandTree(v any, path string, skip map[string]bool, params Parameters) (any, *Error) {
	if skip[path] {
		return v, nil
	}
	switch t := v.(type) {
	case string:
		s, err := expand(t, params)
		if err != nil {
			err.Path = path
			return nil, err
		}
		return s, nil
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			nv, err := expandTree(t[k], joinKey(path, k), skip, params)
			if err != nil {
				return nil, err
			}
			t[k] = nv
		}
	case []any:
		for i := range t {
			nv, err := expandTree(t[i], fmt.Sprintf("%s[%d]", path, i), skip, params)
			if err != nil {
				return nil, err
			}
			t[i] = nv
		}
	}
	return v, nil
}

func wantsExpansion(obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	return ann[edgev1alpha1.AnnotationExpandParameters] == "true"
}

// replace applies one replacement and returns the field path it wrote.
func replace(obj map[string]any, r edgev1alpha1.Replacement, params Parameters) (string, error) {
	segs, err := parsePath(r.Path)
	if err != nil {
		return "", err
	}
	path := fieldPath(segs)
	switch path {
	case "apiVersion", "kind", "metadata.name", "metadata.namespace":
		return "", fmt.Errorf("%s cannot be replaced: a copy must keep the object's identity", path)
	case "metadata":
		return "", errors.New("metadata cannot be replaced as a whole: a copy must keep the object's name and namespace")
	}
	var value any
	if err := json.Unmarshal(r.Value.Raw, &value); err != nil {
		return "", fmt.Errorf("value is not valid JSON: %v", err)
	}
	value, xerr := expandTree(value, "", nil, params)
	if xerr != nil {
		return "", xerr
	}
	return path, set(obj, segs, value)
}

// segment is one step of a replacement path: a map key, or a list index if isIndex.
type segment struct {
	key     string
	index   int
	isIndex bool
}

var simpleKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinKey appends map key k to field path path, bracketing and quoting keys that are not simple.
func joinKey(path, k string) string {
	switch {
	case !simpleKey.MatchString(k):
		return path + "[" + strconv.Quote(k) + "]"
	case path == "":
		return k
	default:
		return path + "." + k
	}
}

func fieldPath(segs []segment) string {
	path := ""
	for _, s := range segs {
		if s.isIndex {
			path = fmt.Sprintf("%s[%d]", path, s.index)
		} else {
			path = joinKey(path, s.key)
		}
	}
	return path
}

func unsupported(what string) error {
	return fmt.Errorf("%s are not supported in a replacement path", what)
}

// parsePath parses a JSONPath that names one field: $.a.b, .a.b, {.a.b} or {$.a.b}, with list
// indexes (a[0]) and bracketed quoted keys (a['b.c'] or a["b/c"]).
func parsePath(p string) ([]segment, error) {
	s := strings.TrimSpace(p)
	if strings.HasPrefix(s, "{") {
		if !strings.HasSuffix(s, "}") {
			return nil, errors.New("unbalanced braces")
		}
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	s = strings.TrimPrefix(s, "$")
	if s == "" {
		return nil, errors.New("the whole object cannot be replaced: the path must name a field")
	}
	var segs []segment
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
			if strings.HasPrefix(s, ".") {
				return nil, unsupported("recursive descents (..)")
			}
			n := strings.IndexAny(s, ".[")
			if n < 0 {
				n = len(s)
			}
			name := s[:n]
			s = s[n:]
			switch {
			case name == "*":
				return nil, unsupported("wildcards (*)")
			case name == "":
				return nil, errors.New("empty field name")
			case strings.ContainsAny(name, "]{}()?@'\"*, "):
				return nil, fmt.Errorf("unexpected character in field name %q (use ['...'] for such keys)", name)
			}
			segs = append(segs, segment{key: name})
		case '[':
			seg, rest, err := parseBracket(s[1:])
			if err != nil {
				return nil, err
			}
			segs, s = append(segs, seg), rest
		default:
			return nil, fmt.Errorf("unexpected %q where '.' or '[' was expected", s[:1])
		}
	}
	return segs, nil
}

// parseBracket parses what follows a '[' and returns the segment and the rest after the ']'.
func parseBracket(s string) (segment, string, error) {
	if s != "" && (s[0] == '\'' || s[0] == '"') {
		var key strings.Builder
		for i := 1; i < len(s); i++ {
			switch {
			case s[i] == '\\' && i+1 < len(s):
				i++
				key.WriteByte(s[i])
			case s[i] == s[0]:
				rest := s[i+1:]
				if strings.HasPrefix(rest, ",") {
					return segment{}, "", unsupported("unions ([a,b])")
				}
				if !strings.HasPrefix(rest, "]") {
					return segment{}, "", errors.New("expected ']' after quoted key")
				}
				return segment{key: key.String()}, rest[1:], nil
			default:
				key.WriteByte(s[i])
			}
		}
		return segment{}, "", errors.New("unterminated quoted key")
	}
	if strings.HasPrefix(s, "?") {
		return segment{}, "", unsupported("filters ([?(...)])")
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return segment{}, "", errors.New("missing ']'")
	}
	in := strings.TrimSpace(s[:end])
	switch {
	case in == "*":
		return segment{}, "", unsupported("wildcards ([*])")
	case strings.Contains(in, ":"):
		return segment{}, "", unsupported("slices ([start:end])")
	case strings.Contains(in, ","):
		return segment{}, "", unsupported("unions ([a,b])")
	}
	n, err := strconv.Atoi(in)
	if err != nil {
		return segment{}, "", fmt.Errorf("invalid list index %q", in)
	}
	if n < 0 {
		return segment{}, "", unsupported("negative indexes")
	}
	return segment{index: n, isIndex: true}, s[end+1:], nil
}

// set puts value at segs in obj, creating missing intermediate maps.
func set(obj map[string]any, segs []segment, value any) error {
	var cur any = obj
	for i, s := range segs {
		here, last := fieldPath(segs[:i]), i == len(segs)-1
		if here == "" {
			here = "the object"
		}
		switch c := cur.(type) {
		case map[string]any:
			if s.isIndex {
				return fmt.Errorf("cannot index %s with [%d]: it is an object, not a list", here, s.index)
			}
			if last {
				c[s.key] = value
				return nil
			}
			next, ok := c[s.key]
			if !ok || next == nil {
				if segs[i+1].isIndex {
					return fmt.Errorf("%s does not exist: only objects, not lists, are created", fieldPath(segs[:i+1]))
				}
				next = map[string]any{}
				c[s.key] = next
			}
			cur = next
		case []any:
			if !s.isIndex {
				return fmt.Errorf("cannot get field %q of %s: it is a list, not an object", s.key, here)
			}
			if s.index >= len(c) {
				return fmt.Errorf("index %d is out of range: %s has %d elements", s.index, here, len(c))
			}
			if last {
				c[s.index] = value
				return nil
			}
			cur = c[s.index]
		default:
			return fmt.Errorf("cannot go into %s: it is a %s, not an object or a list", here, kindOf(cur))
		}
	}
	return nil
}

func kindOf(v any) string {
	switch v.(type) {
	case int64, float64:
		return "number"
	case bool:
		return "boolean"
	}
	return fmt.Sprintf("%T", v)
}
