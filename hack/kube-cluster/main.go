// Command kube-cluster runs a real Kubernetes cluster on loopback ports until it is told to stop:
// the test harness's cluster (etcd from the PATH; kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok from bin/, with one kwok Node), so that a Deployment gets a ReplicaSet
// and Running, Ready pods without any container running. `DEMO_KUBE=1 make demo` uses it as the
// edge clusters of the demo. Run it from the repository's root:
//
//	kube-cluster --name edge-1 --dir .demo/edge-1 --kubeconfig-out .demo/edge-1.kubeconfig
//
// The cluster's data, credentials and logs (<program>.log) are in --dir. Once the cluster is
// usable, its admin kubeconfig is written to --kubeconfig-out; on SIGTERM or SIGINT the programs
// are stopped, that file is removed, and the command exits. The programs die with this command
// even if it is killed.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func main() {
	name := flag.String("name", "", "the cluster's name, in its kubeconfig and Node name")
	dir := flag.String("dir", "", "directory for the cluster's data, credentials and logs")
	kubeconfigOut := flag.String("kubeconfig-out", "", "where to write the admin kubeconfig once the cluster is usable")
	flag.Parse()
	if *name == "" || *dir == "" || *kubeconfigOut == "" {
		fmt.Fprintln(os.Stderr, "usage: kube-cluster --name NAME --dir DIR --kubeconfig-out FILE")
		os.Exit(2)
	}
	if err := run(*name, *dir, *kubeconfigOut); err != nil {
		fmt.Fprintf(os.Stderr, "kube-cluster %s: %v\n", *name, err)
		os.Exit(1)
	}
}

func run(name, dir, kubeconfigOut string) error {
	// Signals that arrive while the cluster starts are acted on once it has started.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)

	fmt.Printf("%s starting Kubernetes cluster %q in %s\n", time.Now().Format(time.RFC3339), name, dir)
	k, err := framework.StartKubeClusterInDir(name, dir)
	if err != nil {
		return err
	}
	defer k.Stop()
	raw, err := os.ReadFile(k.KubeconfigPath)
	if err != nil {
		return err
	}
	// Written whole, then renamed, so that whoever waits for the file never reads half of it.
	tmp := kubeconfigOut + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Clean(kubeconfigOut)); err != nil {
		return err
	}
	defer os.Remove(kubeconfigOut)
	fmt.Printf("%s ready in %s: node %s, kubeconfig %s; processes %v\n", time.Now().Format(time.RFC3339),
		k.StartupTime.Round(100*time.Millisecond), k.NodeName, kubeconfigOut, k.PIDs())

	sig := <-stop
	fmt.Printf("%s %s: stopping the cluster\n", time.Now().Format(time.RFC3339), sig)
	return nil
}
