package outage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kcp-dev/edge-mc/test/framework"
)

var assemblages = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "assemblages"}

// versionLog records, per mailbox and assemblage, every spec.version a watch sees, in order.
type versionLog struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (l *versionLog) record(mailbox string, u *unstructured.Unstructured) {
	version, _, _ := unstructured.NestedString(u.Object, "spec", "version")
	key := mailbox + "/" + u.GetName()
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.seen[key]; len(s) == 0 || s[len(s)-1] != version {
		l.seen[key] = append(s, version)
	}
}

// written returns how many of the mailboxes have an assemblage.
func (l *versionLog) written() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// latest returns the last version seen of each assemblage.
func (l *versionLog) latest() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]string{}
	for key, versions := range l.seen {
		out[key] = versions[len(versions)-1]
	}
	return out
}

// undone returns, for each assemblage that went back to a version it had left, its sequence of
// versions: the mark of two writers undoing each other.
func (l *versionLog) undone() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for key, versions := range l.seen {
		for i, v := range versions {
			if slices.Contains(versions[:i], v) {
				out = append(out, fmt.Sprintf("%s: %s", key, strings.Join(versions, " -> ")))
				break
			}
		}
	}
	return out
}

// watchAssemblages records every version of the mailbox's assemblages until the test ends,
// with a watch that resumes where it left off when the server closes it.
func watchAssemblages(t *testing.T, log *versionLog, mailbox string, client dynamic.Interface) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	list, err := client.Resource(assemblages).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the assemblages of mailbox %s: %v", mailbox, err)
	}
	for i := range list.Items {
		log.record(mailbox, &list.Items[i])
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return client.Resource(assemblages).Watch(ctx, options)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				log.record(mailbox, u)
			}
		}
	}()
}

// TestLeaderKilledMidFanOut runs two replicas of edge-controller-manager and kills the leader
// (kill -9) at a seeded random moment in the 1.5 s after a new workload of 30 ConfigMaps for
// four destinations is applied, as it writes their assemblages. The replica standing by takes over; every destination gets
// the whole workload and reports it applied; no assemblage ever goes back to a version it had
// left (two writers undoing each other); and an edit made after the takeover reaches every edge
// without recreating anything there. The time to take over is logged.
func TestLeaderKilledMidFanOut(t *testing.T) {
	t.Parallel()
	const count = 30
	names := []string{"edge1", "edge2", "edge3", "edge4"}
	regions := map[string]string{}
	for _, name := range names {
		regions[name] = "east"
	}
	made := framework.StartLogicalPClusters(t, names...)
	f := setUp(t, regions)
	second := framework.StartControllerManagerNoWait(t, f.ESPW, append([]string{"--controllers",
		"mailbox,scheduler,placement-translator,upsync,status-summarizer"}, framework.FleetHeartbeatArgs...)...)
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		code, body, err := second.Readyz()
		return err == nil && strings.Contains(body, "standing by"), fmt.Sprintf("second replica /readyz: %d %q %v", code, body, err)
	})

	log := &versionLog{seen: map[string][]string{}}
	edges := map[string]dynamic.Interface{}
	for _, name := range names {
		edge := made()[name]
		framework.StartSyncer(t, f.ESPW, f.IMW, name, edge)
		edges[name] = edge.DynamicClient(t)
		watchAssemblages(t, log, name, framework.KCP(t).DynamicClient(t, f.Mailbox(t, name)))
	}

	// Four destinations are written within milliseconds of each other, so the point is drawn
	// from the apply on: before the leader has written anything, while it writes the versions
	// that follow the objects' arrival, or after.
	delay := time.Duration(framework.Rand(t).IntN(1500)) * time.Millisecond
	f.Apply(t, f.WMW, framework.ManyConfigMaps(count, "east"))
	time.Sleep(delay)
	t.Logf("killing the leader %s after the apply, with %d of %d mailboxes written", delay, log.written(), len(names))
	f.ECM.Crash()
	killedAt := time.Now()
	atKill := log.latest()
	second.WaitReady(t, 2*time.Minute)
	t.Logf("the second replica took over %s after the kill", time.Since(killedAt).Round(100*time.Millisecond))

	allAt := func(version string) {
		t.Helper()
		for _, name := range names {
			framework.Eventually(t, converge, func() (bool, string) {
				list, err := edges[name].Resource(configMaps).Namespace("many").List(framework.Context(t, 10*time.Second), metav1.ListOptions{})
				if err != nil {
					return false, fmt.Sprintf("%s: %v", name, err)
				}
				n := 0
				for _, cm := range list.Items {
					if !strings.HasPrefix(cm.GetName(), "cm-") {
						continue
					}
					n++
					if got, _, _ := unstructured.NestedString(cm.Object, "data", "version"); got != version {
						return false, fmt.Sprintf("%s: %s has version %q, want %q", name, cm.GetName(), got, version)
					}
				}
				if n != count {
					return false, fmt.Sprintf("%s: %d of %d ConfigMaps", name, n, count)
				}
				return true, ""
			})
		}
	}
	allAt("1")
	t.Logf("every edge has the workload %s after the kill", time.Since(killedAt).Round(100*time.Millisecond))
	first, stillToWrite := log.latest(), 0
	for key, version := range first {
		if atKill[key] != version {
			stillToWrite++
		}
	}
	t.Logf("at the kill, %d of %d assemblages did not have the version the edges now have", stillToWrite, len(first))
	before := map[string]map[string]string{}
	for _, name := range names {
		before[name] = framework.ObjectUIDs(t, edges[name], configMaps, "many", "cm-")
	}

	editAt := time.Now()
	f.Kubectl(t, f.WMW, "patch", "configmap", "cm-07", "-n", "many", "--type=merge", "-p", `{"data":{"version":"2"}}`)
	for _, name := range names {
		eventually(t, "the edit after the takeover", edges[name], configMaps, "many", "cm-07", fieldIs("2", "data", "version"))
	}
	t.Logf("an edit after the takeover reached every edge in %s", time.Since(editAt).Round(100*time.Millisecond))
	for _, name := range names {
		mailbox := framework.KCP(t).DynamicClient(t, f.Mailbox(t, name))
		framework.Eventually(t, converge, func() (bool, string) {
			list, err := mailbox.Resource(assemblages).List(context.Background(), metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 {
				return false, fmt.Sprintf("%s: want one assemblage: %v %v", name, list, err)
			}
			spec, _, _ := unstructured.NestedString(list.Items[0].Object, "spec", "version")
			applied, _, _ := unstructured.NestedString(list.Items[0].Object, "status", "appliedVersion")
			return spec == applied, fmt.Sprintf("%s: version %q, applied %q", name, spec, applied)
		})
		after := framework.ObjectUIDs(t, edges[name], configMaps, "many", "cm-")
		for cm, uid := range before[name] {
			if after[cm] != uid {
				t.Errorf("%s: %s was recreated after the takeover: uid %s, now %s", name, cm, uid, after[cm])
			}
		}
	}
	log.mu.Lock()
	t.Logf("versions seen, by mailbox and assemblage: %v", log.seen)
	log.mu.Unlock()
	if undone := log.undone(); len(undone) > 0 {
		t.Errorf("assemblages went back to a version they had left (two writers undoing each other):\n%s", strings.Join(undone, "\n"))
	}
	if second.Exited() {
		t.Error("the second replica exited")
	}
}
