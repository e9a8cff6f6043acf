package framework

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestKubeCluster starts a real Kubernetes cluster, runs a Deployment on its kwok node until its
// pods are Running and Ready, and checks that Stop leaves nothing running.
func TestKubeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	start := time.Now()
	k := StartKubeCluster(t, "smoke")
	t.Logf("startup took %s", time.Since(start).Round(10*time.Millisecond))

	ctx := Context(t, 3*time.Minute)
	client := k.KubeClient(t)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "smoke"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "smoke"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "smoke"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: "registry.example/smoke:1", // never pulled: kwok runs no containers
				}}},
			},
		},
	}
	deployStart := time.Now()
	if _, err := client.AppsV1().Deployments("smoke").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 2*time.Minute, func() (bool, string) {
		d, err := client.AppsV1().Deployments("smoke").Get(ctx, "smoke", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas == 2, fmt.Sprintf("readyReplicas=%d", d.Status.ReadyReplicas)
	})
	t.Logf("deployment ready %s after creation", time.Since(deployStart).Round(10*time.Millisecond))

	pods, err := client.CoreV1().Pods("smoke").List(ctx, metav1.ListOptions{LabelSelector: "app=smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods, want 2", len(pods.Items))
	}
	for _, pod := range pods.Items {
		ready := false
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if pod.Status.Phase != corev1.PodRunning || !ready || pod.Spec.NodeName != k.NodeName {
			t.Errorf("pod %s: phase %s, ready %v, node %q; want Running, Ready, on %q",
				pod.Name, pod.Status.Phase, ready, pod.Spec.NodeName, k.NodeName)
		}
	}

	// The kubeconfig works for kubectl too.
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.Command(kubectl, "--kubeconfig", k.KubeconfigPath, "get", "pods", "-n", "smoke", "-o", "wide").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl: %v\n%s", err, out)
		}
		t.Logf("$ kubectl get pods -n smoke -o wide\n%s", out)
	}

	pids := k.PIDs()
	if len(pids) != 5 {
		t.Fatalf("running programs %v, want 5", pids)
	}
	names := make([]string, 0, len(pids))
	for name := range pids {
		names = append(names, name)
	}
	sort.Strings(names)
	var total, totalPeak int64
	var report strings.Builder
	for _, name := range names {
		rss, peak, err := RSS(pids[name])
		if err != nil {
			t.Fatal(err)
		}
		total += rss
		totalPeak += peak
		fmt.Fprintf(&report, "  %-24s RSS %4d MB (peak %4d MB), CPU %.1f s\n", name, rss>>20, peak>>20, CPUSeconds(pids[name]))
	}
	t.Logf("memory of the cluster's programs:\n%s  %-24s RSS %4d MB (peak %4d MB)", report.String(), "total", total>>20, totalPeak>>20)

	k.Stop()
	k.Stop() // idempotent
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) is still there after Stop: %v", name, pid, err)
		}
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group of %s (%d) is still there after Stop: %v", name, pid, err)
		}
	}
	if len(k.PIDs()) != 0 {
		t.Errorf("PIDs after Stop: %v", k.PIDs())
	}
	if os.Getenv("EDGE_E2E_KEEP") == "" {
		if _, err := os.Stat(k.dir); !os.IsNotExist(err) {
			t.Errorf("the cluster's directory %s is still there after Stop: %v", k.dir, err)
		}
	}
}
