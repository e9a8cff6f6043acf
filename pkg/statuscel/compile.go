// Package statuscel is status you define, with CEL: the StatusCollectors and HealthRules of a
// workload workspace compiled (at the center, to accept or refuse them, and at the edge, to run
// them), evaluated at the edge by the syncer on the objects it applied (Collect, Decide), and
// combined at the center by the status summarizer over a placement's destinations (Combine).
// Both sides import it, as they import package transport; it holds no controller.
//
// It uses cel-go through Kubernetes' own CEL environment (k8s.io/apiserver/pkg/cel/environment:
// the libraries and cost model that CRD validation rules and admission policies use), so that
// what a user knows of CEL in Kubernetes holds here, with the same cost units: an expression whose
// estimated cost is over EstimatedCostLimit is refused when compiled, and one evaluation stops at
// RuntimeCostLimit, an error that is counted and reported, never fatal.
package statuscel

import (
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// The CEL budget. Costs are in CEL's cost units, as Kubernetes counts them for CRD validation
// rules (PerCallLimit, about 0.1 s of CPU).
const (
	// RuntimeCostLimit stops one evaluation of one expression on one object.
	RuntimeCostLimit = celconfig.PerCallLimit
	// EstimatedCostLimit refuses an expression whose worst case, estimated when it is compiled,
	// is over it. The estimate takes every list, map and string of the object to hold at most
	// SizeHint elements (an object at the edge has no schema here to bound them).
	EstimatedCostLimit = celconfig.PerCallLimit
	SizeHint           = 1000
)

// VariableName is the variable by which expressions see the object.
const VariableName = "object"

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

func celEnv() (*cel.Env, error) {
	envOnce.Do(func() {
		base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).StoredExpressionsEnv()
		env, envErr = base.Extend(cel.Variable(VariableName, cel.DynType))
	})
	return env, envErr
}

// ExprError is an expression that does not compile, or whose estimated cost is over the limit.
type ExprError struct {
	// Field is where the expression is, e.g. spec.select[image].
	Field string
	// Expression is the expression.
	Expression string
	// Message says what is wrong, with the line and column.
	Message string
}

func (e *ExprError) Error() string {
	return fmt.Sprintf("%s: %q: %s", e.Field, e.Expression, e.Message)
}

// Errors are several ExprErrors.
type Errors []*ExprError

func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, x := range e {
		msgs[i] = x.Error()
	}
	return strings.Join(msgs, "; ")
}

// program is one compiled expression.
type program struct {
	field string
	prg   cel.Program
}

// kind of result an expression must give.
type want int

const (
	wantAny want = iota
	wantBool
	wantString
)

// compile compiles one expression, checks its result type and its estimated cost.
func compile(field, expr string, w want) (*program, *ExprError) {
	e, err := celEnv()
	if err != nil {
		return nil, &ExprError{Field: field, Expression: expr, Message: "the CEL environment: " + err.Error()}
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		return nil, &ExprError{Field: field, Expression: expr, Message: positions(iss.Err().Error())}
	}
	out := ast.OutputType()
	switch {
	case w == wantBool && !out.IsAssignableType(cel.BoolType):
		return nil, &ExprError{Field: field, Expression: expr, Message: fmt.Sprintf("gives %s, not a bool", out)}
	case w == wantString && !out.IsAssignableType(cel.StringType):
		return nil, &ExprError{Field: field, Expression: expr, Message: fmt.Sprintf("gives %s, not a string", out)}
	}
	est, err := e.EstimateCost(ast, &library.CostEstimator{SizeEstimator: sizeHint{}})
	if err != nil {
		return nil, &ExprError{Field: field, Expression: expr, Message: "its cost cannot be estimated: " + err.Error()}
	}
	if est.Max > EstimatedCostLimit {
		return nil, &ExprError{Field: field, Expression: expr, Message: fmt.Sprintf(
			"its estimated cost, up to %d, is over the limit of %d (lists, maps and strings of the object taken to hold up to %d elements): make it do less per element, or filter first",
			est.Max, EstimatedCostLimit, SizeHint)}
	}
	prg, err := e.Program(ast, cel.CostLimit(RuntimeCostLimit), cel.CostTracking(&library.CostEstimator{}))
	if err != nil {
		return nil, &ExprError{Field: field, Expression: expr, Message: err.Error()}
	}
	return &program{field: field, prg: prg}, nil
}

// positions makes cel-go's issues read without its placeholder name for the input: "ERROR:
// <input>:1:9: ..." becomes "line 1, column 9: ...", followed by its excerpt with a caret.
func positions(msg string) string {
	msg = strings.ReplaceAll(msg, "ERROR: <input>:", "at ")
	return strings.TrimSpace(msg)
}

// sizeHint bounds, for the cost estimate, every list, map and string to SizeHint elements.
type sizeHint struct{}

func (sizeHint) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: SizeHint}
}

func (sizeHint) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// Collector is a compiled StatusCollector.
type Collector struct {
	Name    string
	Spec    edgev1alpha1.StatusCollectorSpec
	filter  *program
	selects []*program
	groupBy []*program
}

// CompileCollector compiles a collector's expressions; the error lists every one that does not
// compile or is over the cost limit.
func CompileCollector(name string, spec *edgev1alpha1.StatusCollectorSpec) (*Collector, error) {
	c := &Collector{Name: name, Spec: *spec.DeepCopy()}
	var errs Errors
	if spec.Filter != "" {
		p, err := compile("spec.filter", spec.Filter, wantBool)
		if err != nil {
			errs = append(errs, err)
		}
		c.filter = p
	}
	for _, s := range spec.Select {
		p, err := compile(fmt.Sprintf("spec.select[%s]", s.Name), s.Expression, wantAny)
		if err != nil {
			errs = append(errs, err)
		}
		c.selects = append(c.selects, p)
	}
	for _, g := range spec.GroupBy {
		p, err := compile(fmt.Sprintf("spec.groupBy[%s]", g.Name), g.Expression, wantAny)
		if err != nil {
			errs = append(errs, err)
		}
		c.groupBy = append(c.groupBy, p)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// HealthRule is a compiled HealthRule.
type HealthRule struct {
	Name    string
	Spec    edgev1alpha1.HealthRuleSpec
	ready   *program
	failed  *program
	message *program
}

// CompileHealthRule compiles a health rule's expressions.
func CompileHealthRule(name string, spec *edgev1alpha1.HealthRuleSpec) (*HealthRule, error) {
	h := &HealthRule{Name: name, Spec: *spec.DeepCopy()}
	var errs Errors
	var err *ExprError
	if h.ready, err = compile("spec.ready", spec.Ready, wantBool); err != nil {
		errs = append(errs, err)
	}
	if spec.Failed != "" {
		if h.failed, err = compile("spec.failed", spec.Failed, wantBool); err != nil {
			errs = append(errs, err)
		}
	}
	if spec.Message != "" {
		if h.message, err = compile("spec.message", spec.Message, wantString); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return h, nil
}
