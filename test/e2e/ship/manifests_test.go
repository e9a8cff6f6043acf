package ship

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/kcp-dev/edge-mc/test/framework"
)

const deployNamespace = "edge-mc"

// TestManifests applies config/deploy, with the Secret and the image tag that an operator's
// overlay adds, to a real Kubernetes cluster of the harness, and checks that every object is
// accepted and what each says; then runs what the Deployment runs, as processes.
func TestManifests(t *testing.T) {
	root, err := framework.RepoFile()
	if err != nil {
		t.Fatal(err)
	}
	kcpKubeconfig, err := os.ReadFile(framework.KCP(t).KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cluster := framework.StartKubeCluster(t, "center")
	client := cluster.KubeClient(t)

	// An operator's overlay, rendered with kustomize's library and applied with kubectl.
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(root, "config", "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(overlay, "kcp.kubeconfig"), kcpKubeconfig)
	writeFile(t, filepath.Join(overlay, "kustomization.yaml"), []byte(fmt.Sprintf(`resources:
- %s
images:
- name: ghcr.io/kcp-dev/edge-mc/edge-controller-manager
  newTag: %q
secretGenerator:
- name: edge-controller-manager-kcp
  namespace: edge-mc
  files:
  - kubeconfig=kcp.kubeconfig
`, base, testVersion)))
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		t.Fatalf("rendering the overlay of config/deploy: %v", err)
	}
	rendered, err := resources.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	apply := exec.Command("kubectl", "--kubeconfig", cluster.KubeconfigPath, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(string(rendered))
	out, err := apply.CombinedOutput()
	t.Logf("$ kubectl apply -f <config/deploy and overlay>\n%s", out)
	if err != nil {
		t.Fatalf("kubectl apply: %v", err)
	}

	ctx := context.Background()
	d, err := client.AppsV1().Deployments(deployNamespace).Get(ctx, "edge-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDeploymentSpec(t, d)

	// The Secret holds the kubeconfig, under the name the Deployment mounts.
	secretName := d.Spec.Template.Spec.Volumes[0].Secret.SecretName
	secret, err := client.CoreV1().Secrets(deployNamespace).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Secret %s that the Deployment mounts: %v", secretName, err)
	}
	if string(secret.Data["kubeconfig"]) != string(kcpKubeconfig) {
		t.Errorf("the Secret %s does not hold the kubeconfig under the key kubeconfig", secretName)
	}

	// The ServiceAccount exists, without a token, and may do nothing in this cluster: there is
	// no RBAC to apply because the manager makes no request here.
	sa, err := client.CoreV1().ServiceAccounts(deployNamespace).Get(ctx, "edge-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("the ServiceAccount mounts its token; want automountServiceAccountToken: false")
	}
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Namespace: deployNamespace, Verb: "get", Resource: "secrets", Name: secretName},
		{Namespace: deployNamespace, Verb: "list", Resource: "pods"},
		{Namespace: deployNamespace, Verb: "create", Group: "coordination.k8s.io", Resource: "leases"},
		{Verb: "list", Resource: "namespaces"},
	} {
		checkDenied(t, client, "system:serviceaccount:"+deployNamespace+":edge-controller-manager", attrs)
	}

	for _, get := range []func() error{
		func() error {
			_, err := client.CoreV1().Services(deployNamespace).Get(ctx, "edge-controller-manager", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := client.PolicyV1().PodDisruptionBudgets(deployNamespace).Get(ctx, "edge-controller-manager", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Error(err)
		}
	}

	// The namespace enforces the restricted Pod Security level: a privileged pod is refused ...
	_, err = client.CoreV1().Pods(deployNamespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Errorf("a privileged pod in namespace %s: %v, want it refused by Pod Security (restricted)", deployNamespace, err)
	}
	// ... and the Deployment's two pods are admitted, scheduled, and reported Running and Ready
	// by kwok, which runs no container.
	framework.Eventually(t, 2*time.Minute, func() (bool, string) {
		d, err := client.AppsV1().Deployments(deployNamespace).Get(ctx, "edge-controller-manager", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas == 2 && d.Status.AvailableReplicas == 2,
			fmt.Sprintf("ready %d, available %d, conditions %v", d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.Conditions)
	})
	pods, err := client.CoreV1().Pods(deployNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=edge-controller-manager"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, v := range p.Spec.Volumes {
			if v.Projected != nil {
				t.Errorf("pod %s has the projected volume %s: a ServiceAccount token mounted, want none", p.Name, v.Name)
			}
		}
	}
	framework.Eventually(t, time.Minute, func() (bool, string) {
		pdb, err := client.PolicyV1().PodDisruptionBudgets(deployNamespace).Get(ctx, "edge-controller-manager", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pdb.Status.CurrentHealthy == 2 && pdb.Status.DisruptionsAllowed == 1,
			fmt.Sprintf("PodDisruptionBudget: %d healthy, %d disruptions allowed", pdb.Status.CurrentHealthy, pdb.Status.DisruptionsAllowed)
	})

	t.Run("replicas as processes", func(t *testing.T) { runReplicas(t, d, secret.Data["kubeconfig"]) })
}

// checkDeploymentSpec checks what the Deployment promises: two replicas electing a leader, the
// probes, the metrics port, the resources, the kcp kubeconfig from the Secret, the image.
func checkDeploymentSpec(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.Volumes) == 0 || pod.Volumes[0].Secret == nil {
		t.Fatalf("the pod template: %d containers, volumes %v; want one container and the Secret's volume first", len(pod.Containers), pod.Volumes)
	}
	c := pod.Containers[0]
	if want := "ghcr.io/kcp-dev/edge-mc/edge-controller-manager:" + testVersion; c.Image != want {
		t.Errorf("image %s, want %s (the overlay's tag)", c.Image, want)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--leader-elect=true", "--kubeconfig=/etc/edge-mc/kcp/kubeconfig", "--http-address=:8090"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe %v, want GET /healthz", c.LivenessProbe)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz?exclude=leader" {
		t.Errorf("readiness probe %v, want GET /readyz?exclude=leader", c.ReadinessProbe)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8090 {
		t.Errorf("ports %v, want 8090 (/metrics)", c.Ports)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %v, want CPU and memory requests and a memory limit", c.Resources)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a ServiceAccount token; want automountServiceAccountToken: false")
	}
}

// checkDenied checks that user may not do what attrs say, by a SubjectAccessReview.
func checkDenied(t *testing.T, client kubernetes.Interface, user string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	review, err := client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               user,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + deployNamespace, "system:authenticated"},
			ResourceAttributes: &attrs,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if review.Status.Allowed {
		t.Errorf("%s may %s %s %s in %q (%s); want no rights in this cluster", user, attrs.Verb, attrs.Resource, attrs.Name, attrs.Namespace, review.Status.Reason)
	}
}

// runReplicas runs the image's edge-controller-manager twice, as the Deployment's two replicas
// would run, with its arguments and the Secret's kubeconfig, against the harness's kcp, and asks
// each the Deployment's probes: both alive and ready, one leading.
func runReplicas(t *testing.T, d *appsv1.Deployment, kubeconfig []byte) {
	framework.KubectlEdge(t, "init").MustSucceed(t)
	out := madeRelease(t)
	idx := layoutIndex(t, filepath.Join(out, "images", "edge-controller-manager"))
	img := imageFor(t, idx, platformHere())
	binary := writeExecutable(t, "edge-controller-manager", layerFiles(t, img)["edge-controller-manager"].data)
	kubeconfigPath := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, kubeconfigPath, kubeconfig)

	c := d.Spec.Template.Spec.Containers[0]
	var addresses []string
	for i := 0; i < 2; i++ {
		ports, err := framework.FreePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		address := "127.0.0.1:" + strconv.Itoa(ports[0])
		addresses = append(addresses, address)
		var args []string
		for _, a := range c.Args {
			switch {
			case strings.HasPrefix(a, "--kubeconfig="):
				a = "--kubeconfig=" + kubeconfigPath // where the Secret's volume puts it
			case strings.HasPrefix(a, "--http-address="):
				a = "--http-address=" + address // a port of its own, as a pod has
			}
			args = append(args, a)
		}
		args = append(args, "--identity=replica-"+strconv.Itoa(i))
		cmd, err := framework.StartCommand(binary, filepath.Join(t.TempDir(), "ecm.log"), args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cmd.Stop)
	}
	get := func(address, path string) (int, string) {
		resp, err := http.Get("http://" + address + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		return resp.StatusCode, string(buf[:n])
	}
	framework.Eventually(t, 2*time.Minute, func() (bool, string) {
		var states []string
		leaders, standing := 0, 0
		for _, a := range addresses {
			live, _ := get(a, c.LivenessProbe.HTTPGet.Path)
			ready, _ := get(a, c.ReadinessProbe.HTTPGet.Path)
			lead, why := get(a, "/readyz")
			states = append(states, fmt.Sprintf("%s: liveness %d, readiness %d, /readyz %d %q", a, live, ready, lead, why))
			if live != http.StatusOK || ready != http.StatusOK {
				return false, strings.Join(states, "; ")
			}
			switch {
			case lead == http.StatusOK:
				leaders++
			case strings.Contains(why, "standing by"):
				standing++
			}
		}
		return leaders == 1 && standing == 1, strings.Join(states, "; ")
	})
}

func platformHere() v1.Platform { return v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH} }

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
