// Command mailboxes benchmarks the mailbox controller against the server's own limit, in one run
// on one kcp:
//
//  1. raw: a plain parallel client creates N bare workspaces and waits until all are ready;
//  2. mailboxes: with edge-controller-manager running, N SyncTargets are created in an inventory
//     workspace, and the clock runs until every one reports MailboxReady;
//
// then prints a table (and JSON with -json) with both rates, their ratio, kcp's RSS per mailbox
// and the controller's RSS. Run it with `make bench-mailboxes` or
// `go run ./test/bench/mailboxes -n 1000`; it needs bin/kcp (make tools).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

type result struct {
	N                     int     `json:"n"`
	Parallelism           int     `json:"parallelism"`
	RawSeconds            float64 `json:"rawSeconds"`
	RawPerSecond          float64 `json:"rawWorkspacesPerSecond"`
	MailboxSeconds        float64 `json:"mailboxSeconds"`
	MailboxPerSecond      float64 `json:"mailboxesPerSecond"`
	RatioToRaw            float64 `json:"ratioToRaw"`
	KCPRSSBeforeMB        float64 `json:"kcpRSSBeforeMailboxesMB"`
	KCPRSSAfterMB         float64 `json:"kcpRSSAfterMailboxesMB"`
	KCPMBPerMailbox       float64 `json:"kcpMBPerMailbox"`
	KCPMBPerRawWorkspace  float64 `json:"kcpMBPerRawWorkspace"`
	ControllerRSSMB       float64 `json:"controllerRSSMB"`
	ControllerPeakRSSMB   float64 `json:"controllerPeakRSSMB"`
	ControllerCPUSeconds  float64 `json:"controllerCPUSeconds"`
	MailboxReadyP50Second float64 `json:"mailboxReadyP50Seconds"`
	MailboxReadyP99Second float64 `json:"mailboxReadyP99Seconds"`
}

func main() {
	n := flag.Int("n", 100, "number of SyncTargets (and of raw workspaces)")
	parallel := flag.Int("parallel", 16, "parallel requests of the raw client and of the SyncTarget creator")
	workers := flag.Int("workers", 16, "edge-controller-manager --workers")
	jsonOut := flag.String("json", "", "also write the figures as JSON to this file")
	flag.Parse()
	if err := run(*n, *parallel, *workers, *jsonOut); err != nil {
		fmt.Fprintf(os.Stderr, "mailboxes benchmark: %v\n", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(n, parallel, workers int, jsonOut string) error {
	ctx := context.Background()
	say("starting kcp")
	s, err := framework.StartKCP()
	if err != nil {
		return err
	}
	defer s.Stop()
	res := result{N: n, Parallelism: parallel}

	espwPath := logicalcluster.NewPath("root:bench:espw")
	imw := logicalcluster.NewPath("root:bench:imw")
	kube, err := kcpkubernetesclientset.NewForConfig(s.Base)
	if err != nil {
		return err
	}
	if _, err := espw.Install(ctx, s.KCP, kube, espwPath, nil); err != nil {
		return err
	}
	ensurer := &workspaces.Ensurer{KCP: s.KCP}
	if _, err := ensurer.Workspace(ctx, imw); err != nil {
		return err
	}
	if _, err := ensurer.Binding(ctx, imw, edgev1alpha1.EdgeAPIExportName, espwPath, edgev1alpha1.EdgeAPIExportName); err != nil {
		return err
	}
	if _, err := ensurer.Workspace(ctx, logicalcluster.NewPath("root:raw")); err != nil {
		return err
	}

	// 1. raw: bare workspaces from a plain parallel client.
	rssStart, _, _ := framework.RSS(s.PID())
	say("raw: creating %d bare workspaces, %d at a time", n, parallel)
	start := time.Now()
	var rawDone atomic.Int64
	stopProgress := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopProgress:
				return
			case <-time.After(30 * time.Second):
				say("raw: %d of %d ready after %.0fs", rawDone.Load(), n, time.Since(start).Seconds())
			}
		}
	}()
	rawErr := framework.ForEach(n, parallel, func(i int) error {
		err := createReadyWorkspace(ctx, s, logicalcluster.NewPath("root:raw"), fmt.Sprintf("ws-%05d", i))
		rawDone.Add(1)
		return err
	})
	close(stopProgress)
	if rawErr != nil {
		return rawErr
	}
	res.RawSeconds = time.Since(start).Seconds()
	res.RawPerSecond = float64(n) / res.RawSeconds
	rssAfterRaw, _, _ := framework.RSS(s.PID())
	res.KCPMBPerRawWorkspace = float64(rssAfterRaw-rssStart) / float64(n) / 1e6
	say("raw: %d workspaces in %.1fs (%.2f/s)", n, res.RawSeconds, res.RawPerSecond)

	// 2. mailboxes.
	binDir, err := framework.BuildCommands()
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	ports, err := framework.FreePorts(1)
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(binDir, "ecm.log"))
	if err != nil {
		return err
	}
	cm := exec.Command(filepath.Join(binDir, "edge-controller-manager"), "--kubeconfig", s.KubeconfigPath,
		"--espw", espwPath.String(), "--workers", strconv.Itoa(workers), "--http-address", "127.0.0.1:"+strconv.Itoa(ports[0]))
	cm.Stdout, cm.Stderr = logFile, logFile
	if err := cm.Start(); err != nil {
		return err
	}
	defer func() { _ = cm.Process.Signal(syscall.SIGTERM); _ = cm.Wait() }()
	time.Sleep(3 * time.Second) // let it sync its (empty) caches

	rssBefore, _, _ := framework.RSS(s.PID())
	res.KCPRSSBeforeMB = float64(rssBefore) / 1e6
	dyn, err := dynamic.NewForConfig(s.ConfigFor(imw))
	if err != nil {
		return err
	}
	gvr := edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	say("mailboxes: creating %d SyncTargets, %d at a time, with edge-controller-manager running", n, parallel)
	start = time.Now()
	var created atomic.Int64
	if err := framework.ForEach(n, parallel, func(i int) error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(edgev1alpha1.SchemeGroupVersion.String())
		u.SetKind("SyncTarget")
		u.SetName(fmt.Sprintf("edge-%05d", i))
		_, err := dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
		created.Add(1)
		return err
	}); err != nil {
		return err
	}
	say("mailboxes: %d SyncTargets created in %.1fs; waiting for MailboxReady", n, time.Since(start).Seconds())
	readyAt := map[string]time.Duration{}
	lastReport := time.Now()
	for len(readyAt) < n {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, item := range list.Items {
			if _, seen := readyAt[item.GetName()]; seen {
				continue
			}
			st := &edgev1alpha1.SyncTarget{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, st); err != nil {
				return err
			}
			if meta.IsStatusConditionTrue(st.Status.Conditions, edgev1alpha1.SyncTargetMailboxReady) {
				readyAt[st.Name] = time.Since(start)
			}
		}
		if time.Since(lastReport) > 15*time.Second {
			say("mailboxes: %d of %d ready after %.0fs", len(readyAt), n, time.Since(start).Seconds())
			lastReport = time.Now()
		}
		if time.Since(start) > time.Duration(n)*3*time.Second+5*time.Minute {
			return fmt.Errorf("only %d of %d mailboxes ready after %s (log: %s)", len(readyAt), n, time.Since(start), logFile.Name())
		}
		time.Sleep(time.Second)
	}
	res.MailboxSeconds = time.Since(start).Seconds()
	res.MailboxPerSecond = float64(n) / res.MailboxSeconds
	res.RatioToRaw = res.MailboxPerSecond / res.RawPerSecond
	var times []float64
	for _, d := range readyAt {
		times = append(times, d.Seconds())
	}
	sort.Float64s(times)
	res.MailboxReadyP50Second = times[len(times)/2]
	res.MailboxReadyP99Second = times[(len(times)*99)/100]
	time.Sleep(5 * time.Second) // let kcp settle before reading its memory
	rssAfter, _, _ := framework.RSS(s.PID())
	res.KCPRSSAfterMB = float64(rssAfter) / 1e6
	res.KCPMBPerMailbox = float64(rssAfter-rssBefore) / float64(n) / 1e6
	cur, peak, _ := framework.RSS(cm.Process.Pid)
	res.ControllerRSSMB, res.ControllerPeakRSSMB = float64(cur)/1e6, float64(peak)/1e6
	res.ControllerCPUSeconds = framework.CPUSeconds(cm.Process.Pid)

	printTable(res)
	if jsonOut != "" {
		raw, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(jsonOut, append(raw, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// createReadyWorkspace creates a bare workspace and waits until it is ready.
func createReadyWorkspace(ctx context.Context, s *framework.Server, parent logicalcluster.Path, name string) error {
	_, err := s.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Create(ctx, &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return workspaces.Poll(ctx, 10*time.Minute, func(ctx context.Context) (bool, error) {
		ws, err := s.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		return err == nil && ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady, nil
	}, "workspace %s", name)
}

func printTable(r result) {
	fmt.Printf("\nmailbox controller benchmark: N=%d, parallelism %d, %d cores\n\n", r.N, r.Parallelism, goruntime.NumCPU())
	fmt.Printf("| measure | value |\n|---|---|\n")
	fmt.Printf("| raw: %d bare workspaces created and ready | %.1f s (%.2f/s) |\n", r.N, r.RawSeconds, r.RawPerSecond)
	fmt.Printf("| mailboxes: %d SyncTargets to MailboxReady | %.1f s (%.2f/s) |\n", r.N, r.MailboxSeconds, r.MailboxPerSecond)
	fmt.Printf("| mailbox rate / raw workspace rate (target >= 80%%) | %.0f%% |\n", 100*r.RatioToRaw)
	fmt.Printf("| one mailbox ready after its SyncTarget's creation began: p50 / p99 | %.1f s / %.1f s |\n", r.MailboxReadyP50Second, r.MailboxReadyP99Second)
	fmt.Printf("| kcp RSS per raw workspace | %.1f MB |\n", r.KCPMBPerRawWorkspace)
	fmt.Printf("| kcp RSS per mailbox (target < 8 MB) | %.1f MB (%.0f -> %.0f MB) |\n", r.KCPMBPerMailbox, r.KCPRSSBeforeMB, r.KCPRSSAfterMB)
	fmt.Printf("| edge-controller-manager RSS, peak (target < 150 MB) | %.0f MB, %.0f MB |\n", r.ControllerRSSMB, r.ControllerPeakRSSMB)
	fmt.Printf("| edge-controller-manager CPU time | %.1f s |\n", r.ControllerCPUSeconds)
}
