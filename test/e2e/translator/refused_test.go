package translator

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestRefusedWritesConverge: kcp refuses every write of edge-controller-manager with 429 for a
// while, as its priority and fairness does when it sheds load, while an edit goes out to a
// dozen destinations. Nothing reaches a mailbox meanwhile; once the refusals end, every
// destination gets the new version, and none waits much longer than the others: no key stuck in
// a long backoff, no destination behind another's retries. edge-controller-manager's metrics
// count the refusals.
func TestRefusedWritesConverge(t *testing.T) {
	t.Parallel()
	const n = 12
	const refusals = 8 * time.Second
	proxy := framework.StartRefusingProxy(t)
	regions := map[string]string{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("d%02d", i)
		names = append(names, name)
		regions[name] = "north"
	}
	f := framework.NewFleetThrough(t, regions, proxy.Through)
	settings := func(value string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: app}\ndata: {value: %q}\n", value)
	}
	f.Apply(t, f.WMW, settings("v1"))
	f.Apply(t, f.WMW, "apiVersion: edge.kcp.io/v1alpha1\nkind: EdgePlacement\nmetadata: {name: app}\nspec:\n  locationSelectors: [{matchLabels: {region: north}}]\n  downsync: [{namespaces: [app]}]\n")

	mailboxes := map[string]logicalcluster.Path{}
	first := map[string]string{}
	for _, name := range names {
		mailboxes[name] = f.Mailbox(t, name)
	}
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		for _, name := range names {
			v := versionIn(t, mailboxes[name])
			if v == "" {
				return false, "no assemblage of placement app in the mailbox of " + name + " yet"
			}
			first[name] = v
		}
		return true, ""
	})

	proxy.Refuse(true)
	before := proxy.Refused()
	f.Apply(t, f.WMW, settings("v2")) // the test's own client, straight to kcp
	time.Sleep(refusals)
	refused := proxy.Refused() - before
	t.Logf("kcp (the proxy) refused %d writes of edge-controller-manager in %s", refused, refusals)
	if refused == 0 {
		t.Fatal("edge-controller-manager made no write while refused: the edit was not seen, and this test tested nothing")
	}
	for _, name := range names {
		if v := versionIn(t, mailboxes[name]); v != "" && v != first[name] {
			t.Fatalf("the mailbox of %s got version %s while every write was refused", name, v)
		}
	}

	proxy.Refuse(false)
	end := time.Now()
	var mu sync.Mutex
	took := map[string]time.Duration{}
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(end) < framework.Converge {
				if v := versionIn(t, mailboxes[name]); v != "" && v != first[name] {
					mu.Lock()
					took[name] = time.Since(end)
					mu.Unlock()
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	var late []string
	var times []float64
	for _, name := range names {
		d, ok := took[name]
		if !ok {
			late = append(late, name)
			continue
		}
		times = append(times, d.Seconds())
	}
	if len(late) > 0 {
		t.Fatalf("%d destinations did not get the new version within %s of the refusals' end: %s", len(late), framework.Converge, strings.Join(late, ", "))
	}
	sort.Float64s(times)
	p90, most := framework.Percentile(times, 0.9), times[len(times)-1]
	t.Logf("after the refusals ended, the destinations got the new version in p50 %.2f s, p90 %.2f s, max %.2f s", framework.Percentile(times, 0.5), p90, most)
	// The polls see a version up to 100 ms late, and kcp's watch of the mailboxes lags a little:
	// a quarter of a second of slack on top of the bound.
	if most > 1.5*p90+0.25 {
		t.Errorf("the last destination got the new version %.2f s after the refusals ended, more than 1.5 x the p90 (%.2f s)", most, p90)
	}

	metrics := framework.ScrapeMetrics(t, f.ECM.HTTPAddress)
	if v := framework.MetricSum(metrics, "edge_controller_kcp_write_refusals_total"); v == 0 {
		t.Errorf("edge-controller-manager's edge_controller_kcp_write_refusals_total is 0 after %d refusals", refused)
	}
}

// versionIn is the version of placement app's assemblage in a mailbox, "" if there is none.
func versionIn(t *testing.T, mb logicalcluster.Path) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := framework.KCP(t).DynamicClient(t, mb).Resource(assemblagesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for i := range list.Items {
		if p, _, _ := unstructured.NestedString(list.Items[i].Object, "spec", "placement", "name"); p == "app" {
			v, _, _ := unstructured.NestedString(list.Items[i].Object, "spec", "version")
			return v
		}
	}
	return ""
}
