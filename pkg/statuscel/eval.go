package statuscel

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"google.golang.org/protobuf/types/known/structpb"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// Object is one object at the edge, as the expressions see it.
type Object struct {
	// Key is its key (edgev1alpha1.CopyKey).
	Key string
	// Content is the object as the edge has it.
	Content map[string]any
}

// errMissing is an expression that reads a field the object does not have: an empty value, not
// an error.
var errMissing = fmt.Errorf("missing")

// eval runs a program on an object. A panic in an expression's evaluation is an error: the
// syncer never crashes for a user's expression.
func (p *program) eval(obj map[string]any) (val ref.Val, err error) {
	defer func() {
		if r := recover(); r != nil {
			val, err = nil, fmt.Errorf("%s: evaluation panicked: %v", p.field, r)
		}
	}()
	out, _, err := p.prg.Eval(map[string]any{VariableName: obj})
	if err != nil {
		if isMissing(err.Error()) {
			return nil, errMissing
		}
		return nil, fmt.Errorf("%s: %v", p.field, err)
	}
	if types.IsError(out) {
		return nil, fmt.Errorf("%s: %v", p.field, out)
	}
	return out, nil
}

// isMissing says whether a CEL error is about a field the object does not have.
func isMissing(msg string) bool {
	return strings.Contains(msg, "no such key") || strings.Contains(msg, "no such attribute")
}

// jsonOf encodes a CEL value as JSON.
func jsonOf(v ref.Val) (string, error) {
	native, err := v.ConvertToNative(structpbValueType)
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(native.(*structpb.Value).AsInterface())
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// number is a numeric value: an integer while every value added was one.
type number struct {
	isFloat bool
	i       int64
	f       float64
}

func numberOf(v ref.Val) (number, bool) {
	switch x := v.Value().(type) {
	case int64:
		return number{i: x, f: float64(x)}, true
	case uint64:
		if x > math.MaxInt64 {
			return number{isFloat: true, f: float64(x)}, true
		}
		return number{i: int64(x), f: float64(x)}, true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return number{}, false
		}
		return number{isFloat: true, f: x}, true
	}
	return number{}, false
}

// ParseNumber reads a JSON number as a report carries it.
func ParseNumber(s string) (number, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return number{i: i, f: float64(i)}, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return number{}, false
	}
	return number{isFloat: true, f: f}, true
}

func (n number) String() string {
	if !n.isFloat {
		return strconv.FormatInt(n.i, 10)
	}
	return strconv.FormatFloat(n.f, 'g', -1, 64)
}

func (n number) add(m number) number {
	if !n.isFloat && !m.isFloat {
		if s := n.i + m.i; (s > n.i) == (m.i > 0) {
			return number{i: s, f: float64(s)}
		}
	}
	return number{isFloat: true, f: n.f + m.f}
}

func (n number) less(m number) bool {
	if !n.isFloat && !m.isFloat {
		return n.i < m.i
	}
	return n.f < m.f
}

// accumulator is one combination of one group as values come in.
type accumulator struct {
	typ   string
	set   bool
	value number // sum for sum and avg; min; max
	count int64
}

func (a *accumulator) add(n number, weight int64) {
	a.count += weight
	switch a.typ {
	case edgev1alpha1.CombineSum:
		a.value = a.value.add(n)
	case edgev1alpha1.CombineAvg:
		a.value = a.value.add(number{isFloat: true, f: n.f * float64(weight)})
	case edgev1alpha1.CombineMin:
		if !a.set || n.less(a.value) {
			a.value = n
		}
	case edgev1alpha1.CombineMax:
		if !a.set || a.value.less(n) {
			a.value = n
		}
	}
	a.set = true
}

// result is the combination's value as a report carries it: avg as the mean.
func (a *accumulator) result() edgev1alpha1.CombinedValue {
	out := edgev1alpha1.CombinedValue{Count: a.count}
	if !a.set || a.count == 0 {
		return out
	}
	if a.typ == edgev1alpha1.CombineAvg {
		out.Value = number{isFloat: true, f: a.value.f / float64(a.count)}.String()
		return out
	}
	out.Value = a.value.String()
	return out
}

// group is one group being collected.
type group struct {
	key   []string
	count int64
	accs  []*accumulator
}

// errorTally counts run-time errors and keeps the first.
type errorTally struct {
	count   int32
	example *edgev1alpha1.CollectorError
}

func (t *errorTally) add(object string, err error) {
	t.count++
	if t.example == nil {
		t.example = &edgev1alpha1.CollectorError{Object: object, Error: truncate(err.Error(), 512)}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Limit is the collector's limit of groups or rows.
func Limit(spec *edgev1alpha1.StatusCollectorSpec) int {
	if spec.Limit > 0 && spec.Limit <= edgev1alpha1.MaxCollectorLimit {
		return int(spec.Limit)
	}
	if spec.Limit > edgev1alpha1.MaxCollectorLimit {
		return edgev1alpha1.MaxCollectorLimit
	}
	return edgev1alpha1.DefaultCollectorLimit
}

// Collect evaluates the collector on objects, as the syncer does at the edge: the objects that
// pass the filter, grouped and combined (with combine) or as rows (without), sorted by key or by
// object, the first Limit kept and the rest counted in omitted. An expression that fails on an
// object is counted, with the first failure as the example; the object then adds nothing (a
// filter or groupBy failing) or nothing for that value (a select failing). A field the object
// does not have is an empty value: the filter is false, a groupBy value is null, a select value
// is left out.
func (c *Collector) Collect(objects []Object) edgev1alpha1.CollectorReport {
	report := edgev1alpha1.CollectorReport{Name: c.Name}
	var tally errorTally
	groups := map[string]*group{}
	var rows []edgev1alpha1.CollectedObjectRow
	combining := len(c.Spec.Combine) > 0
	selectIndex := map[string]int{}
	for i, s := range c.Spec.Select {
		selectIndex[s.Name] = i
	}
	for _, o := range objects {
		if c.filter != nil {
			v, err := c.filter.eval(o.Content)
			if err == errMissing {
				continue
			}
			if err != nil {
				tally.add(o.Key, err)
				continue
			}
			if b, ok := v.Value().(bool); !ok || !b {
				if !ok {
					tally.add(o.Key, fmt.Errorf("spec.filter: gives %s, not a bool", v.Type().TypeName()))
				}
				continue
			}
		}
		report.Matched++
		values := make([]ref.Val, len(c.selects))
		for i, p := range c.selects {
			v, err := p.eval(o.Content)
			if err == errMissing {
				continue
			}
			if err != nil {
				tally.add(o.Key, err)
				continue
			}
			values[i] = v
		}
		if !combining {
			row := edgev1alpha1.CollectedObjectRow{Object: o.Key, Values: make([]string, len(values))}
			for i, v := range values {
				if v == nil {
					continue
				}
				s, err := jsonOf(v)
				if err != nil {
					tally.add(o.Key, fmt.Errorf("%s: its value cannot be encoded: %v", c.selects[i].field, err))
					continue
				}
				row.Values[i] = s
			}
			rows = append(rows, row)
			continue
		}
		key := make([]string, len(c.groupBy))
		failed := false
		for i, p := range c.groupBy {
			v, err := p.eval(o.Content)
			if err == errMissing {
				key[i] = "null"
				continue
			}
			if err == nil {
				key[i], err = jsonOf(v)
			}
			if err != nil {
				tally.add(o.Key, err)
				failed = true
				break
			}
		}
		if failed {
			continue
		}
		id := strings.Join(key, "\x00")
		g := groups[id]
		if g == nil {
			g = &group{key: key}
			for _, cb := range c.Spec.Combine {
				g.accs = append(g.accs, &accumulator{typ: cb.Type})
			}
			groups[id] = g
		}
		g.count++
		for i, cb := range c.Spec.Combine {
			if cb.Type == edgev1alpha1.CombineCount {
				continue
			}
			v := values[selectIndex[cb.Select]]
			if v == nil {
				continue
			}
			n, ok := numberOf(v)
			if !ok {
				tally.add(o.Key, fmt.Errorf("spec.combine[%s]: %s of spec.select[%s], which gives %s, not a number", cb.Name, cb.Type, cb.Select, v.Type().TypeName()))
				continue
			}
			g.accs[i].add(n, 1)
		}
	}
	limit := Limit(&c.Spec)
	if combining {
		ids := make([]string, 0, len(groups))
		for id := range groups {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if len(ids) > limit {
			report.Omitted = int32(len(ids) - limit)
			ids = ids[:limit]
		}
		for _, id := range ids {
			g := groups[id]
			out := edgev1alpha1.CollectedGroup{Key: g.key, Count: g.count}
			for i, cb := range c.Spec.Combine {
				if cb.Type == edgev1alpha1.CombineCount {
					continue
				}
				v := g.accs[i].result()
				v.Name = cb.Name
				out.Values = append(out.Values, v)
			}
			report.Groups = append(report.Groups, out)
		}
	} else {
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].Object < rows[j].Object })
		if len(rows) > limit {
			report.Omitted = int32(len(rows) - limit)
			rows = rows[:limit]
		}
		report.Rows = rows
	}
	report.Errors, report.ErrorExample = tally.count, tally.example
	return report
}

// Decide is the health rule's verdict on an object at the edge: ObjectFailed when failed is true,
// else ObjectReady when ready is true, else ObjectApplied (progressing), with the message
// expression's value as the reason when not ready. A field the object does not have makes an
// expression false (the object is not ready yet). An expression that fails at run time makes
// the object Applied, with the error as its reason.
func (h *HealthRule) Decide(obj map[string]any) (state, reason string) {
	test := func(p *program) (bool, error) {
		if p == nil {
			return false, nil
		}
		v, err := p.eval(obj)
		if err == errMissing {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		b, ok := v.Value().(bool)
		if !ok {
			return false, fmt.Errorf("%s: gives %s, not a bool", p.field, v.Type().TypeName())
		}
		return b, nil
	}
	message := func(fallback string) string {
		if h.message == nil {
			return fallback
		}
		v, err := h.message.eval(obj)
		if err != nil {
			return fallback
		}
		if s, ok := v.Value().(string); ok && s != "" {
			return truncate(s, 512)
		}
		return fallback
	}
	failed, err := test(h.failed)
	if err != nil {
		return edgev1alpha1.ObjectApplied, fmt.Sprintf("health rule %s: %v", h.Name, err)
	}
	if failed {
		return edgev1alpha1.ObjectFailed, message(fmt.Sprintf("health rule %s says failed", h.Name))
	}
	ready, err := test(h.ready)
	if err != nil {
		return edgev1alpha1.ObjectApplied, fmt.Sprintf("health rule %s: %v", h.Name, err)
	}
	if ready {
		return edgev1alpha1.ObjectReady, ""
	}
	return edgev1alpha1.ObjectApplied, message(fmt.Sprintf("health rule %s says not ready yet", h.Name))
}

var structpbValueType = reflect.TypeOf(&structpb.Value{})
