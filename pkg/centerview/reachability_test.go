package centerview

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	thirdpartyinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	kcpfakeclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
)

func TestReachability(t *testing.T) {
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	r := &reachability{now: func() time.Time { return now }}
	if _, _, down := r.down(); down {
		t.Fatal("down before any request")
	}
	r.observe(errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
	first := now
	now = now.Add(10 * time.Second)
	r.observe(errors.New("dial tcp 127.0.0.1:1: connect: connection reset"))
	since, lastErr, down := r.down()
	if !down || !since.Equal(first) || lastErr != "dial tcp 127.0.0.1:1: connect: connection reset" {
		t.Errorf("after two failures: down %v since %s (%q), want since the first failure and the last error", down, since, lastErr)
	}
	r.observe(nil)
	if _, _, down := r.down(); down {
		t.Error("still down after a request that got an answer")
	}
}

type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }

// TestRoundTripperIgnoresCancelledRequests: a request that its caller cancelled (an informer
// stopping) says nothing about the shard.
func TestRoundTripperIgnoresCancelledRequests(t *testing.T) {
	r := &reachability{now: time.Now}
	rt := &roundTripper{next: failingTransport{context.Canceled}, r: r}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://shard-a/vw", nil)
	_, _ = rt.RoundTrip(req)
	if _, _, down := r.down(); down {
		t.Error("a cancelled request marked the shard down")
	}
	rt.next = failingTransport{errors.New("connection refused")}
	req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, "https://shard-a/vw", nil)
	_, _ = rt.RoundTrip(req)
	if _, _, down := r.down(); !down {
		t.Error("a refused connection did not mark the shard down")
	}
}

func shardObject(name, baseURL, vwURL string) *corev1alpha1.Shard {
	return &corev1alpha1.Shard{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: "root"}},
		Spec:       corev1alpha1.ShardSpec{BaseURL: baseURL, VirtualWorkspaceURL: vwURL},
	}
}

func TestShardNameOf(t *testing.T) {
	shards := []corev1alpha1.Shard{
		*shardObject("root", "https://127.0.0.1:6443", ""),
		*shardObject("shard-1", "https://127.0.0.1:6444", "https://127.0.0.1:6444/"),
		*shardObject("vw-elsewhere", "https://10.0.0.9:6443", "https://vw.example:7443/shard-9"),
	}
	for _, tc := range []struct{ url, want string }{
		{"https://127.0.0.1:6443/services/apiexport/abc/mailbox.edge.kcp.io", "root"},
		{"https://127.0.0.1:6444/services/apiexport/abc/mailbox.edge.kcp.io", "shard-1"},
		{"https://vw.example:7443/shard-9/services/apiexport/abc/edge.kcp.io", "vw-elsewhere"},
		{"https://127.0.0.1:64430/services/apiexport/abc/edge.kcp.io", ""}, // a longer port is another host
		{"https://elsewhere/services/apiexport/abc/edge.kcp.io", ""},
	} {
		if got := shardNameOf(tc.url, shards); got != tc.want {
			t.Errorf("shardNameOf(%s) = %q, want %q", tc.url, got, tc.want)
		}
	}
	if got := hostOf("https://127.0.0.1:6444/services/x"); got != "127.0.0.1:6444" {
		t.Errorf("hostOf: %q", got)
	}
}

// TestUnreachableShardAtStart: with one shard down from the start, the informers of an export
// that tolerates it count as synced but not complete; a logical cluster that no listed shard
// holds is on the unreachable one, which Outage names from its Shard object; once it answers
// and is listed, all is complete and nothing is out.
func TestUnreachableShardAtStart(t *testing.T) {
	shards := &fakeShards{sources: map[string]*fcache.FakeControllerSource{}}
	shards.source("https://shard-a/vw").Add(configMap("ca", "one"))
	down := shards.source("https://shard-b/vw")
	down.ListError = errors.New("connection refused")
	kcp := kcpfakeclientset.NewSimpleClientset(shardObject("shard-b", "https://shard-b", ""))
	e, err := NewEndpoints(kcp, logicalcluster.NewPath("root:espw"), "test.export", &rest.Config{Host: "https://front-proxy.example"})
	if err != nil {
		t.Fatal(err)
	}
	e.TolerateUnreachableShards()
	indexers := cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc}
	i := e.newInformer("configmaps", indexers, func(url string, _ kcpdynamic.ClusterInterface) cache.SharedIndexInformer {
		return thirdpartyinformers.NewSharedIndexInformer(shards.source(url), &corev1.ConfigMap{}, 0, indexers)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go i.Run(ctx.Done())
	e.setURLs(ctx, []string{"https://shard-a/vw", "https://shard-b/vw"})
	sliceRead(e)
	time.Sleep(300 * time.Millisecond)
	if i.HasSynced() {
		t.Fatal("synced while a shard that was never listed has not been found unreachable")
	}
	// The fake source does not go through the transport: record its failure as the transport would.
	e.health["https://shard-b/vw"].observe(errors.New("dial tcp: connection refused"))
	eventually(t, "synced without the unreachable shard", i.HasSynced)
	if i.Complete() {
		t.Error("complete while a shard has never been listed")
	}
	if _, out := e.Outage(ctx, "ca"); out {
		t.Error("the logical cluster of the shard that answers is said to be out")
	}
	outage, out := e.Outage(ctx, "cb")
	if !out || outage.Shard != "shard-b" || outage.URL != "https://shard-b/vw" || outage.Since.IsZero() {
		t.Errorf("Outage of a logical cluster that no listed shard holds: %+v, %v; want shard-b", outage, out)
	}

	// The shard answers again.
	down.ListError = nil
	down.Add(configMap("cb", "two"))
	e.health["https://shard-b/vw"].observe(nil)
	eventually(t, "complete once the shard is listed", i.Complete)
	if got := keys(i); !slices.Equal(got, []string{"ca|default/one", "cb|default/two"}) {
		t.Errorf("keys: %v", got)
	}
	if _, out := e.Outage(ctx, "cb"); out {
		t.Error("out after the shard answered")
	}
}

// TestRegistrationWaitsForTheHandler: a handler's registration has synced only once the handler
// has been given every object of each shard's first list, later than the informer's store.
func TestRegistrationWaitsForTheHandler(t *testing.T) {
	shards := &fakeShards{sources: map[string]*fcache.FakeControllerSource{}}
	shards.source("https://shard-a/vw").Add(configMap("ca", "one"))
	shards.source("https://shard-b/vw").Add(configMap("cb", "two"))
	e, i := newTestInformer(t, shards)
	release := make(chan struct{})
	reg, err := i.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { <-release }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go i.Run(ctx.Done())
	e.setURLs(ctx, []string{"https://shard-a/vw", "https://shard-b/vw"})
	sliceRead(e)
	eventually(t, "the stores synced", i.HasSynced)
	if reg.HasSynced() {
		t.Error("the registration synced while its handler has not been given the objects")
	}
	close(release)
	eventually(t, "the registration synced", reg.HasSynced)
}
