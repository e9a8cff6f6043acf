package security

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
// appears in any log (edge-controller-manager's, the syncer's, the center kcp's, the edge kcp's),
// in any event of the workload workspace, the mailbox or the edge cluster, in the metrics of
// edge-controller-manager or the syncer, or in the bytes of the center's storage.
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
	// A value in the clear beside it, which the center's storage must show: the scan below reads
	// what etcd wrote.
	marker := randomValue(t)
	f.Apply(t, f.WMW, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: marker, namespace: app}\ndata: {marker: %s}\n", marker))
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

	// Nor in the metrics of edge-controller-manager or the syncer.
	for name, address := range map[string]string{"edge-controller-manager": f.ECM.HTTPAddress, "edge-syncer": syncer.HTTPAddress} {
		metrics := framework.ScrapeMetrics(t, address)
		for what, s := range secrets {
			if strings.Contains(metrics, s) {
				t.Errorf("the metrics of %s hold %s", name, what)
			}
		}
	}

	// Nor in the center's storage (kcp's embedded etcd: its data and write-ahead log), which
	// holds the workload workspace's Secret encrypted (TestMain) and the assemblages' boxes
	// sealed: the bytes of every file there. The ConfigMap's value beside the Secret is there in
	// the clear, in the workload workspace and in the mailbox's assemblage.
	root := framework.KCP(t).RootDirectory()
	if root == "" {
		t.Fatalf("the center kcp was not started by the harness: its storage cannot be read")
	}
	needles := map[string]string{"the ConfigMap's value": marker}
	for what, s := range secrets {
		if what != "the syncer's private key in base64" { // made at the edge: never at the center
			needles[what] = s
		}
	}
	// In storage a Secret's data is raw bytes (protobuf), not base64.
	if raw, err := base64.StdEncoding.DecodeString(secrets["the center's sealing secret in base64"]); err == nil && len(raw) > 0 {
		needles["the center's sealing secret"] = string(raw)
	}
	files, found := scanTree(t, root, needles)
	if len(found["the ConfigMap's value"]) == 0 {
		t.Errorf("the ConfigMap's value is in none of the %d files under %s: does the scan read etcd's data?", files, root)
	}
	for what, in := range found {
		if what != "the ConfigMap's value" {
			t.Errorf("the center's storage holds %s, in %s", what, strings.Join(in, ", "))
		}
	}
	t.Logf("scanned %d files of the center's storage; the ConfigMap's value in %d of them", files, len(found["the ConfigMap's value"]))
}

// scanTree reads every regular file under root and returns how many it read and, for each
// needle found, the files holding it.
func scanTree(t *testing.T, root string, needles map[string]string) (int, map[string][]string) {
	t.Helper()
	files, found := 0, map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for what, s := range needles {
			if bytes.Contains(raw, []byte(s)) {
				found[what] = append(found[what], strings.TrimPrefix(path, root+string(filepath.Separator)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the center's storage under %s: %v", root, err)
	}
	return files, found
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
