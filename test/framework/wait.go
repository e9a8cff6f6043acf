package framework

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Eventually calls check every 200 ms until it returns true, and fails the test with check's
// last explanation if that does not happen within timeout.
func Eventually(t testing.TB, timeout time.Duration, check func() (done bool, why string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	why := ""
	for {
		var done bool
		done, why = check()
		if done {
			return
		}
		if time.Now().After(deadline) {
			noteFailure(t, fmt.Sprintf("not so after %s: %s", timeout, why))
			t.Fatalf("not so after %s: %s", timeout, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// WaitAtLeast polls count every 100 ms until it reaches n, and returns the count it saw then;
// it fails the test after timeout. A fault test uses it to strike at a chosen point of a
// process, e.g. once n of a fan-out's objects have arrived at the edges.
func WaitAtLeast(t testing.TB, timeout time.Duration, what string, count func() (int, error), n int) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last, why := 0, ""
	for {
		got, err := count()
		switch {
		case err != nil:
			why = err.Error()
		case got >= n:
			return got
		default:
			last, why = got, ""
		}
		if time.Now().After(deadline) {
			noteFailure(t, fmt.Sprintf("%s: %d after %s, not yet %d %s", what, last, timeout, n, why))
			t.Fatalf("%s: %d after %s, not yet %d %s", what, last, timeout, n, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// failures holds, per test, why a wait of this package failed it and where the test called the
// wait: the processes' logs that a failed test prints come after the failure's own line, and
// can be long, so each log ends by repeating it (FailureNote) where a reader of the output's tail
// sees it.
var failures sync.Map // testing.TB -> string

func noteFailure(t testing.TB, why string) {
	where := ""
	for skip := 2; skip < 20; skip++ {
		_, file, line, ok := runtime.Caller(skip)
		if !ok {
			break
		}
		if !strings.Contains(file, "/test/framework/") {
			where = fmt.Sprintf("%s:%d: ", file[strings.LastIndex(file, "/")+1:], line)
			break
		}
	}
	failures.Store(t, where+why)
}

// FailureNote returns why a wait of this package failed the test, with the line of the test
// that waited, or "" if none did.
func FailureNote(t testing.TB) string {
	if v, ok := failures.Load(t); ok {
		return v.(string)
	}
	return ""
}

// Context returns a context that ends with the test, or after timeout.
func Context(t testing.TB, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// ConditionStatus returns the status of the condition of the given type in an object's
// status.conditions, and its reason and message; status is "" if the condition is absent.
func ConditionStatus(obj *unstructured.Unstructured, condType string) (status metav1.ConditionStatus, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != condType {
			continue
		}
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return metav1.ConditionStatus(s), r, msg
	}
	return "", "", ""
}

// EventuallyCRDEstablished waits until the CustomResourceDefinition name in the workspace ws is
// Established. (`kubectl wait --for=condition=Established` fails at once instead of waiting when
// it reads the CRD before kcp has given it any condition.)
func EventuallyCRDEstablished(t testing.TB, ws logicalcluster.Path, name string) {
	t.Helper()
	client := KCP(t).DynamicClient(t, ws)
	Eventually(t, Converge, func() (bool, string) {
		u := GetObject(t, client, crdsGVR, "", name)
		if u == nil {
			return false, "no CustomResourceDefinition " + name + " in " + ws.String()
		}
		status, reason, message := ConditionStatus(u, "Established")
		return status == metav1.ConditionTrue, fmt.Sprintf("CustomResourceDefinition %s in %s: Established is %q (%s: %s)", name, ws, status, reason, message)
	})
}
