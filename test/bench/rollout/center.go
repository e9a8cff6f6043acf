package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kcp-dev/logicalcluster/v3"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// The center-side figures (-center): the controllers' assemblage writes a second, against a
// plain client's writes of ConfigMaps of an assemblage's size into the same mailboxes, at the
// controllers' own cap of writes in flight, in the same run.

// fanOut is how fast the controllers wrote one placement's assemblages into every mailbox.
type fanOut struct {
	Deliveries int `json:"deliveries"`
	// Seconds: from the creation or edit until the edge player's watch saw the last new version.
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"perSecond"`
	P50Seconds float64 `json:"p50Seconds"`
	P90Seconds float64 `json:"p90Seconds"`
	MaxSeconds float64 `json:"maxSeconds"`
}

// rawWrites is what a plain client did into the same mailboxes.
type rawWrites struct {
	Bytes            int     `json:"configMapBytes"`
	Parallel         int     `json:"parallel"`
	Writes           int     `json:"writes"`
	CreateSeconds    float64 `json:"createSeconds"`
	CreatesPerSecond float64 `json:"createsPerSecond"`
	UpdateSeconds    float64 `json:"updateSeconds"`
	UpdatesPerSecond float64 `json:"updatesPerSecond"`
}

// fanOutOf reads the edge player's record of a placement's deliveries since start.
func (b *bench) fanOutOf(placement string, start time.Time) fanOut {
	var f fanOut
	var lat []float64
	for _, d := range b.player.of(placement, start) {
		f.Deliveries++
		lat = append(lat, d.seen.Sub(start).Seconds())
	}
	if len(lat) == 0 {
		return f
	}
	sort.Float64s(lat)
	f.P50Seconds, f.P90Seconds, f.MaxSeconds = framework.Percentile(lat, 0.5), framework.Percentile(lat, 0.9), framework.Percentile(lat, 1)
	f.Seconds = f.MaxSeconds
	f.PerSecond = float64(f.Deliveries) / f.Seconds
	return f
}

// mailboxes lists the mailbox workspaces of the N destinations.
func (b *bench) mailboxes(ctx context.Context) ([]logicalcluster.Path, error) {
	imw, err := dynamic.NewForConfig(b.s.ConfigFor(b.imw))
	if err != nil {
		return nil, err
	}
	list, err := imw.Resource(syncTargetsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the SyncTargets of %s: %w", b.imw, err)
	}
	var out []logicalcluster.Path
	for i := range list.Items {
		if p, _, _ := unstructured.NestedString(list.Items[i].Object, "status", "mailboxWorkspace"); p != "" {
			out = append(out, logicalcluster.NewPath(p))
		}
	}
	return out, nil
}

// assemblageBytes is the size, as JSON, of one assemblage of the placement in a mailbox.
func (b *bench) assemblageBytes(ctx context.Context, mailbox logicalcluster.Path, placement string) (int, error) {
	client, err := dynamic.NewForConfig(b.s.ConfigFor(mailbox))
	if err != nil {
		return 0, err
	}
	list, err := client.Resource(edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing the assemblages of mailbox %s: %w", mailbox, err)
	}
	for i := range list.Items {
		a := list.Items[i]
		if p, _, _ := unstructured.NestedString(a.Object, "spec", "placement", "name"); p == placement {
			unstructured.RemoveNestedField(a.Object, "metadata", "managedFields")
			raw, err := json.Marshal(a.Object)
			return len(raw), err
		}
	}
	return 0, fmt.Errorf("mailbox %s holds no assemblage of placement %s", mailbox, placement)
}

// raw creates, then updates, one ConfigMap of the given size in every mailbox, parallel at a
// time, with a plain client (no client-side rate limit).
func (b *bench) raw(ctx context.Context, mailboxes []logicalcluster.Path, bytes, parallel int, ns string) (rawWrites, error) {
	r := rawWrites{Bytes: bytes, Parallel: parallel, Writes: len(mailboxes)}
	clients := make([]dynamic.Interface, len(mailboxes))
	for i, mb := range mailboxes {
		cfg := b.s.ConfigFor(mb)
		cfg.QPS, cfg.Burst = -1, 0
		var err error
		if clients[i], err = dynamic.NewForConfig(cfg); err != nil {
			return r, err
		}
	}
	const name = "raw"
	say("raw: namespace %s in every mailbox (not timed)", ns)
	if err := framework.ForEach(len(mailboxes), b.cfg.Parallel, func(i int) error {
		_, err := clients[i].Resource(namespacesGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return r, err
	}
	payload := func(c byte) string { return strings.Repeat(string(c), max(1, bytes-200)) }
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"payload": payload('a')}}}
	say("raw: %d ConfigMaps of %d bytes, one per mailbox, %d at a time", len(mailboxes), bytes, parallel)
	t0 := time.Now()
	if err := framework.ForEach(len(mailboxes), parallel, func(i int) error {
		_, err := clients[i].Resource(configMapsGVR).Namespace(ns).Create(ctx, cm.DeepCopy(), metav1.CreateOptions{})
		return err
	}); err != nil {
		return r, fmt.Errorf("raw creates: %w", err)
	}
	r.CreateSeconds = time.Since(t0).Seconds()
	patch, _ := json.Marshal(map[string]any{"data": map[string]any{"payload": payload('b')}})
	t0 = time.Now()
	if err := framework.ForEach(len(mailboxes), parallel, func(i int) error {
		_, err := clients[i].Resource(configMapsGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		return r, fmt.Errorf("raw updates: %w", err)
	}
	r.UpdateSeconds = time.Since(t0).Seconds()
	r.CreatesPerSecond, r.UpdatesPerSecond = float64(r.Writes)/r.CreateSeconds, float64(r.Writes)/r.UpdateSeconds
	say("raw: %d creates in %.2fs (%.0f/s), %d updates in %.2fs (%.0f/s)", r.Writes, r.CreateSeconds, r.CreatesPerSecond, r.Writes, r.UpdateSeconds, r.UpdatesPerSecond)
	return r, nil
}

// runCenter is the -center run: the first delivery of the unbounded placement (creates), -rounds
// edits of it (updates), each timed until the edge player's watch saw the last new version, then
// the raw writes.
func (b *bench) runCenter(ctx context.Context, res *result) error {
	c := b.cfg
	start := time.Now()
	say("center: placement %s (no spec.rollout) on %d destinations", flatPlacement, c.N)
	if err := b.createPlacement(ctx, flatPlacement, nil); err != nil {
		return err
	}
	if _, err := b.waitAllReady(ctx, flatPlacement, start, c.N); err != nil {
		return err
	}
	res.FirstFlatSeconds = time.Since(start).Seconds()
	res.CenterCreate = b.fanOutOf(flatPlacement, start)
	say("center: %d assemblages created in %.1fs (%.0f/s; p90 %.1fs)", res.CenterCreate.Deliveries, res.CenterCreate.Seconds, res.CenterCreate.PerSecond, res.CenterCreate.P90Seconds)
	// The raw writes run before the edits and again after them: the server's pace moves from
	// minute to minute on a shared machine, and the two bracket the controllers'.
	mailboxes, err := b.mailboxes(ctx)
	if err != nil {
		return err
	}
	if len(mailboxes) == 0 {
		return fmt.Errorf("no SyncTarget of %s names its mailbox", b.imw)
	}
	size, err := b.assemblageBytes(ctx, mailboxes[0], flatPlacement)
	if err != nil {
		return err
	}
	if err := b.sleep(ctx, c.settle); err != nil {
		return err
	}
	raw, err := b.raw(ctx, mailboxes, size, c.ControllerCap, "bench-raw-before")
	if err != nil {
		return err
	}
	res.Raw = append(res.Raw, raw)
	for round := 1; round <= c.Rounds; round++ {
		if err := b.sleep(ctx, c.settle); err != nil {
			return err
		}
		ch, err := b.measureChange(ctx, flatPlacement, fmt.Sprintf("v%d", round+1), c.N, time.Time{})
		if err != nil {
			return err
		}
		res.CenterUpdates = append(res.CenterUpdates, ch)
	}
	if err := b.sleep(ctx, c.settle); err != nil {
		return err
	}
	if raw, err = b.raw(ctx, mailboxes, size, c.ControllerCap, "bench-raw-after"); err != nil {
		return err
	}
	res.Raw = append(res.Raw, raw)
	b.limiterFigures(ctx, res)
	return nil
}

// limiterFigures reads edge-controller-manager's write limit and the 429s it met, if it
// serves them.
func (b *bench) limiterFigures(ctx context.Context, res *result) {
	resp, err := http.Get("http://" + b.ecmHTTP + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	text := string(raw)
	res.WriteLimit = framework.MetricSum(text, "edge_controller_kcp_writes_in_flight_limit")
	res.WriteRefusals = framework.MetricSum(text, "edge_controller_kcp_write_refusals_total")
	res.Retries = framework.MetricSum(text, "edge_controller_retries_total")
}

// rawMean is the mean of the raw runs' rates.
func rawMean(raws []rawWrites) (creates, updates float64) {
	for _, r := range raws {
		creates += r.CreatesPerSecond
		updates += r.UpdatesPerSecond
	}
	if n := float64(len(raws)); n > 0 {
		creates, updates = creates/n, updates/n
	}
	return creates, updates
}
