package security

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	eventsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// secretWorkload places a Secret holding %[1]s (later %[2]s) on the edge clusters of region east.
const secretWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: app}
stringData: {password: %s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app}
data: {mode: fast}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchLabels: {region: east}}]
  downsync: [{namespaces: [app]}]
`

// TestSecretValuesNeverLogged runs a short full scenario with edge-controller-manager and
// edge-syncer at the highest verbosity (-v=10, at which client-go logs every request): a Secret
// with a random value is placed at an edge cluster, then changed. Neither value, plain or in
// base64, nor the syncer's own token, nor its private key, nor the center's sealing secret,
// appears in any log (edge-controller-manager's, the syncer's, the center kcp's, the edge kcp's)
// or in any event of the workload workspace, the mailbox or the edge cluster.
func TestSecretValuesNeverLogged(t *testing.T) {
	t.Parallel()
	first, second := randomValue(t), randomValue(t)
	pending := framework.StartLogicalPClusters(t, "edge1")
	f := framework.NewFleetWithArgs(t, map[string]string{"edge1": "east"}, "-v=10")
	edge := pending()["edge1"]
	syncer := framework.StartSyncer(t, f.ESPW, f.IMW, "edge1", edge, "-v=10")
	mailbox := f.Mailbox(t, "edge1")
	ec := edge.DynamicClient(t)

	f.Apply(t, f.WMW, fmt.Sprintf(secretWorkload, first))
	framework.EventuallyObject(t, "the Secret at the edge", ec, secretsGVR, "app", "creds", secretHolds(first))
	f.Kubectl(t, f.WMW, "patch", "secret", "creds", "-n", "app", "--type=merge", "-p", fmt.Sprintf(`{"stringData":{"password":%q}}`, second))
	framework.EventuallyObject(t, "the changed Secret at the edge", ec, secretsGVR, "app", "creds", secretHolds(second))
	// Let the status of what was applied travel back and be summarised.
	time.Sleep(10 * time.Second)

	secrets := map[string]string{"the first value": first, "the second value": second}
	for what, v := range map[string]string{"the first value": first, "the second value": second} {
		secrets[what+" in base64"] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	token := syncerToken(t, syncer.KubeconfigPath)
	secrets["the syncer's token"] = token
	secrets["the syncer's token in base64"] = base64.StdEncoding.EncodeToString([]byte(token))
	// The syncer's private key (made at the edge) and the center's sealing secret are kept out
	// of the logs as well; the Secrets' data reads as base64.
	keySecret := framework.GetObject(t, ec, secretsGVR, transport.DefaultEdgeSyncerNamespace, transport.KeySecretName(syncer.UID))
	sealing := framework.GetObject(t, framework.KCP(t).DynamicClient(t, f.ESPW), secretsGVR, espw.SealingSecretNamespace, espw.SealingSecretName)
	if keySecret == nil || sealing == nil {
		t.Fatalf("the syncer's key Secret (%v) or the ESPW's sealing secret (%v) is missing", keySecret != nil, sealing != nil)
	}
	secrets["the syncer's private key in base64"] = framework.FieldOf(keySecret, "data", transport.KeySecretPrivateKey)
	secrets["the center's sealing secret in base64"] = framework.FieldOf(sealing, "data", espw.SealingSecretKey)

	logs := map[string]string{
		"edge-controller-manager": f.ECM.LogPath(),
		"edge-syncer":             syncer.LogPath(),
		"kcp (center)":            framework.KCP(t).LogPath(),
		"kcp (edge clusters)":     framework.EdgeKCP(t).LogPath(),
	}
	scanned := 0
	for name, path := range logs {
		if path == "" {
			t.Logf("%s: no log to scan (not started by the harness)", name)
			continue
		}
		n, found := scanFile(t, path, secrets)
		scanned += n
		for _, hit := range found {
			t.Errorf("the log of %s holds %s", name, hit)
		}
	}
	t.Logf("scanned %d log lines", scanned)

	// The same logs show every request edge-mc's processes made (client-go logs each at -v=7):
	// none fetched an OpenAPI document, whose serving crashed kcp v0.28.1 (docs/reliability.md).
	for _, name := range []string{"edge-controller-manager", "edge-syncer"} {
		requests, openAPI := countRequests(t, logs[name])
		if requests == 0 {
			t.Errorf("the log of %s shows no request: is it logging at -v=7?", name)
		}
		for _, line := range openAPI {
			t.Errorf("%s fetched OpenAPI: %s", name, line)
		}
		t.Logf("%s made %d requests, none for OpenAPI", name, requests)
	}
	if info, err := os.Stat(f.ECM.LogPath()); err != nil || info.Size() < 100_000 {
		t.Errorf("edge-controller-manager's log is too short for -v=10 (%v, %v): were the flags passed?", info, err)
	}

	events := 0
	for where, client := range map[string]dynamic.Interface{
		"the workload workspace": framework.KCP(t).DynamicClient(t, f.WMW),
		"the mailbox":            framework.KCP(t).DynamicClient(t, mailbox),
		"the edge cluster":       ec,
	} {
		list, err := client.Resource(eventsGVR).List(framework.Context(t, 30*time.Second), metav1.ListOptions{})
		if err != nil {
			t.Errorf("listing the events of %s: %v", where, err)
			continue
		}
		for _, e := range list.Items {
			events++
			raw, _ := e.MarshalJSON()
			for what, s := range secrets {
				if strings.Contains(string(raw), s) {
					t.Errorf("event %s/%s in %s holds %s", e.GetNamespace(), e.GetName(), where, what)
				}
			}
		}
	}
	t.Logf("scanned %d events", events)
}

// randomValue is a recognisable value that nothing else holds.
func randomValue(t *testing.T) string {
	t.Helper()
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	return "edge-mc-test-secret-" + hex.EncodeToString(raw)
}

func secretHolds(value string) func(u *unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		got, _, _ := unstructured.NestedString(u.Object, "data", "password")
		if got != base64.StdEncoding.EncodeToString([]byte(value)) {
			return "not the value yet"
		}
		return ""
	}
}

// syncerToken is the bearer token of a mailbox kubeconfig.
func syncerToken(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		if a.Token != "" {
			return a.Token
		}
	}
	t.Fatalf("%s holds no token", kubeconfig)
	return ""
}

// countRequests counts the HTTP requests that a log at -v=7 shows (client-go's "Request" lines,
// with the verb and the URL), and returns those for OpenAPI documents.
func countRequests(t *testing.T, path string) (int, []string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("reading %s: %v", path, err)
		return 0, nil
	}
	n := 0
	var openAPI []string
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.Contains(line, `"Request" verb=`) || !strings.Contains(line, "url=") {
			continue
		}
		n++
		if strings.Contains(line, "/openapi/") {
			openAPI = append(openAPI, line)
		}
	}
	return n, openAPI
}

// scanFile reads a log and returns how many lines it has and, for each secret found, where
// (without the secret itself).
func scanFile(t *testing.T, path string, secrets map[string]string) (int, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("reading %s: %v", path, err)
		return 0, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var found []string
	seen := map[string]int{}
	lines := 0
	for sc.Scan() {
		lines++
		line := sc.Text()
		for what, s := range secrets {
			if !strings.Contains(line, s) {
				continue
			}
			seen[what]++
			if seen[what] <= 2 {
				shown := strings.ReplaceAll(line, s, "<"+what+">")
				if len(shown) > 400 {
					i := max(0, strings.Index(shown, "<"+what+">")-200)
					shown = "..." + shown[i:min(len(shown), i+400)] + "..."
				}
				found = append(found, fmt.Sprintf("%s at line %d: %s", what, lines, shown))
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Errorf("reading %s: %v", path, err)
	}
	for what, n := range seen {
		if n > 2 {
			found = append(found, fmt.Sprintf("%s on %d lines in all", what, n))
		}
	}
	return lines, found
}
