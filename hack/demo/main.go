// Command demo is gangmap's local demo (`make demo`): it builds, once, a real kube-apiserver and
// etcd from the Go module proxy, starts them, runs gangmap's grouper in-process, applies the
// example workloads (a CustomJob, a kind KAI has no plugin for, with its definition; JobSets and a
// LeaderWorkerSet) while playing their operators, and prints the KAI PodGroups gangmap wrote. Each
// step is announced as it starts. With KEEP=1 in the environment it then keeps the control plane
// and the grouper running, prints the kubeconfig and commands to try, and stops on Ctrl-C. Run it
// from the repository root.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

const (
	// namespace is where the demo's workloads run.
	namespace = "demo"
	// groupTimeout bounds the wait for every pod to carry its pod-group-name annotation.
	groupTimeout = 60 * time.Second
	// nativeNote explains why the demo removes JobSet and LeaderWorkerSet from the native table.
	nativeNote = `With KAI v0.17's defaults, JobSet and LeaderWorkerSet are native kinds: KAI groups them itself and
gangmap leaves them alone (native wins). The demo removes them from the native table, as a cluster
whose KAI lacks those plugins would run gangmap:
  gangmap-grouper --native-kinds-remove=`
)

var (
	// examples are the manifests the demo applies and what gangmap should make of each.
	examples = []struct{ file, expect string }{
		{"examples/customjob.yaml", "one PodGroup, minSubGroup 2 (coordinator:1, worker:3), 6 GPUs"},
		{"examples/jobset-leader-workers.yaml", "one PodGroup, minSubGroup 2 (leader:1, workers:2), 12 GPUs"},
		{"examples/jobset-paralleljobs-two-rjobs.yaml", "one PodGroup, 4 worker pods + 1 driver pod, no GPUs"},
		{"examples/lws-sglang-gpu-limits-only.yaml", "two PodGroups (one per group), each leader:1 + worker:1, 2 GPUs"},
	}
	// workloadCRDs are the CRDs of the example workloads, as a cluster admin would install them.
	workloadCRDs = []string{"examples/crds/example.com_customjobs.yaml", "e2e/testdata/crds/jobset.x-k8s.io_jobsets.yaml", "e2e/testdata/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml"}
	// definitionsDir holds the definitions of the example kinds the catalog has not (CustomJob),
	// passed to the grouper as --definitions, as the chart's `definitions` value would be.
	definitionsDir = "examples/definitions"
	// notNative are the kinds the demo removes from KAI v0.17's native-plugin table.
	notNative = []string{"jobset.x-k8s.io/v1alpha2/JobSet", "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"}
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "\ndemo FAILED:", err)
		os.Exit(1)
	}
	fmt.Println("\ndemo OK")
}

// run performs the demo's steps; whatever it started is stopped before it returns.
func run(ctx context.Context) (err error) {
	var cleanups []func()
	defer func() {
		step(8, "Cleaning up")
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()

	// hack/control-plane.sh says when it builds (and how long a cold build takes), and nothing when
	// the binaries are in its cache.
	step(1, "Control plane binaries")
	assets, err := controlPlaneAssets(ctx)
	if err != nil {
		return err
	}
	fmt.Println("KUBEBUILDER_ASSETS =", assets)
	if err := os.Setenv("KUBEBUILDER_ASSETS", assets); err != nil {
		return err
	}
	closeLog, err := grouperLog()
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() { closeLog(err == nil && os.Getenv("KEEP") != "1") })

	step(2, "Starting kube-apiserver and etcd with the PodGroup, Karta, CustomJob, JobSet and LeaderWorkerSet CRDs")
	cp, err := framework.Start(workloadCRDs...)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() { stopped("control plane", cp.Stop()) })
	fmt.Println("API server:", cp.Config.Host)

	step(3, "Starting gangmap's grouper in-process")
	fmt.Println(nativeNote + strings.Join(notNative, ","))
	fmt.Println("CustomJob's definition comes from --definitions=" + definitionsDir + " (the chart's `definitions` value).")
	gctx, cancel := context.WithCancel(ctx)
	o := app.DefaultOptions()
	o.NativeKindsRemove = notNative
	o.DefinitionPaths = []string{definitionsDir}
	metricsURL := ""
	if os.Getenv("KEEP") == "1" {
		// Kept running, the grouper serves its metrics on a free loopback port, over plain HTTP
		// (--metrics-secure=false: local use only), for the user to read.
		if o.MetricsAddr, err = freeLoopbackAddr(); err != nil {
			cancel()
			return err
		}
		o.MetricsSecure, metricsURL = false, "http://"+o.MetricsAddr+"/metrics"
	}
	done, err := cp.StartGrouper(gctx, o)
	if err != nil {
		cancel()
		return fmt.Errorf("grouper: %w", err)
	}
	cleanups = append(cleanups, func() { cancel(); stopped("grouper", <-done) })

	step(4, "Applying the examples in namespace "+namespace+" and playing their operators")
	if err := applyExamples(ctx, cp); err != nil {
		return err
	}

	step(5, "Waiting until every pod carries the "+kaikeys.PodGroupName+" annotation")
	pods, err := waitGrouped(ctx, cp)
	if err != nil {
		return err
	}
	fmt.Printf("all %d pods grouped\n", len(pods))

	step(6, "What gangmap wrote")
	if err := printTables(ctx, cp, pods); err != nil {
		return err
	}
	if os.Getenv("KEEP") != "1" {
		step(7, "Done (KEEP=1 keeps the control plane and the grouper running)")
		return nil
	}
	step(7, "Keeping the control plane and the grouper running (KEEP=1): Ctrl-C stops them")
	printKeepHelp(assets, cp.Kubeconfig, metricsURL)
	<-ctx.Done()
	return nil
}

// freeLoopbackAddr is a TCP address on 127.0.0.1 that no one listens on now.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// printKeepHelp prints the kubeconfig of the kept control plane, commands to try on it and where
// the grouper's metrics are.
func printKeepHelp(assets, kubeconfig, metricsURL string) {
	fmt.Printf(`kubeconfig: %[2]s
  export KUBECONFIG=%[2]s
  %[1]s/kubectl get podgroups -n %[3]s
  go run ./cmd/gangmap get customjobs -n %[3]s --definitions %[4]s
  go run ./cmd/gangmap describe customjob/finetune -n %[3]s --definitions %[4]s
  go run ./cmd/gangmap get jobsets -n %[3]s --definitions %[4]s --native-kinds-remove=%[5]s
The grouper runs in this process, not as a Deployment the CLI could read its flags from: give the
CLI the grouper's --definitions and --native-kinds-remove, as above, or it judges by the cluster's
Kartas and KAI v0.17's native table alone. New workloads of the example kinds are grouped while
the grouper runs (the control plane has no operators: their pods are yours to create).
The grouper's metrics (docs/metrics-and-dashboard.md): curl -s %[6]s | grep '^gangmap_'
Its logs are in the file printed at step 1, kept after Ctrl-C.
`, assets, kubeconfig, namespace, definitionsDir, strings.Join(notNative, ","), metricsURL)
}

// step announces a step of the demo.
func step(n int, what string) { fmt.Printf("\n== %d. %s\n", n, what) }

// controlPlaneAssets runs hack/control-plane.sh, streaming its progress (stderr) to the user, and
// returns the directory it prints: the binaries, for KUBEBUILDER_ASSETS.
func controlPlaneAssets(ctx context.Context) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", "hack/control-plane.sh")
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/control-plane.sh (run the demo from the repository root: make demo): %w", err)
	}
	return strings.TrimSpace(out.String()), nil
}

// grouperLog sends the grouper's logs (controller-runtime and klog) to a file under
// os.TempDir() and prints its path. The returned func closes the file and removes it when ok
// (the caller keeps it with KEEP=1, as the line printed says).
func grouperLog() (func(ok bool), error) {
	f, err := os.CreateTemp("", "gangmap-demo-grouper-*.log")
	if err != nil {
		return nil, err
	}
	logger := zap.New(zap.WriteTo(f))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	when := "(kept if the demo fails, removed otherwise)"
	if os.Getenv("KEEP") == "1" {
		when = "(kept)"
	}
	fmt.Println("grouper logs:", f.Name(), when)
	return func(ok bool) {
		_ = f.Close()
		if ok && os.Remove(f.Name()) == nil {
			fmt.Println("removed", f.Name())
			return
		}
		fmt.Println("grouper logs kept:", f.Name())
	}, nil
}

// stopped reports that what stopped, with err when stopping failed.
func stopped(what string, err error) {
	if err != nil {
		fmt.Printf("%s stopped with: %v\n", what, err)
		return
	}
	fmt.Println(what, "stopped")
}

// applyExamples creates the namespace and each example's workload, then creates the pods its
// operator would create (the control plane runs no workload operators).
func applyExamples(ctx context.Context, cp *framework.ControlPlane) error {
	if err := cp.CreateNamespace(ctx, namespace); err != nil {
		return err
	}
	for _, ex := range examples {
		objs, err := cp.ApplyFile(ctx, ex.file, namespace)
		if err != nil {
			return fmt.Errorf("%s: %w", ex.file, err)
		}
		for _, obj := range objs {
			operator := cp.RunJobSet
			switch obj.GetKind() {
			case "LeaderWorkerSet":
				operator = cp.RunLeaderWorkerSet
			case "CustomJob":
				// The CustomJob operator's rule (examples/crds/example.com_customjobs.yaml): per role,
				// spec.<role>.replicas pods from spec.<role>.template, owned by the job.
				operator = func(ctx context.Context, w *unstructured.Unstructured) ([]*corev1.Pod, error) {
					return cp.RunRoles(ctx, w, 4, "coordinator", "worker")
				}
			}
			pods, err := operator(ctx, obj)
			if err != nil {
				return fmt.Errorf("%s: %s %s: %w", ex.file, obj.GetKind(), obj.GetName(), err)
			}
			fmt.Printf("%-45s %s/%s: %d pods; expect %s\n", ex.file, obj.GetKind(), obj.GetName(), len(pods), ex.expect)
		}
	}
	return nil
}

// waitGrouped waits until every pod in the namespace has the pod-group-name annotation and
// returns them (a list comes sorted by name); on timeout the error names the pods still waiting.
func waitGrouped(ctx context.Context, cp *framework.ControlPlane) ([]corev1.Pod, error) {
	pods, waiting := corev1.PodList{}, []string{}
	err := framework.WaitFor(ctx, groupTimeout, func(ctx context.Context) (bool, error) {
		if err := cp.Client.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
			return false, err
		}
		waiting = waiting[:0]
		for _, p := range pods.Items {
			if p.Annotations[kaikeys.PodGroupName] == "" {
				waiting = append(waiting, p.Name)
			}
		}
		return len(pods.Items) > 0 && len(waiting) == 0, nil
	})
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("after %s, %d of %d pods have no %s annotation (%s); see the grouper logs",
			groupTimeout, len(waiting), len(pods.Items), kaikeys.PodGroupName, strings.Join(waiting, ", "))
	}
	return pods.Items, err
}

// roleGPUs is one entry of a PodGroup's gangmap.io/role-gpus annotation.
type roleGPUs struct {
	Role       string  `json:"role"`
	Pods       int     `json:"pods"`
	GPUsPerPod float64 `json:"gpusPerPod"`
	GPUs       float64 `json:"gpus"`
}

// printTables prints the PodGroups, their per-role GPUs and the pods with their groups.
func printTables(ctx context.Context, cp *framework.ControlPlane, pods []corev1.Pod) error {
	var list v2alpha2.PodGroupList
	if err := cp.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return err
	}
	pgs := list.Items
	sort.Slice(pgs, func(i, j int) bool { return owner(&pgs[i])+pgs[i].Name < owner(&pgs[j])+pgs[j].Name })
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE/NAME\tOWNER\tMIN-MEMBER\tMIN-SUBGROUP\tSUB-GROUPS\tGPUS")
	for _, pg := range pgs {
		var sgs []string
		for _, sg := range pg.Spec.SubGroups {
			sgs = append(sgs, sg.Name+":"+num(sg.MinMember))
		}
		fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\t%s\t%s\n", pg.Namespace, pg.Name, owner(&pg), num(pg.Spec.MinMember),
			num(pg.Spec.MinSubGroup), orDash(strings.Join(sgs, ",")), orDash(pg.Annotations[kaikeys.GPUs]))
	}
	if slices.ContainsFunc(pgs, func(pg v2alpha2.PodGroup) bool { return pg.Spec.MinMember == nil && pg.Spec.MinSubGroup != nil }) {
		fmt.Fprintln(w, `(MIN-MEMBER "-": with sub-groups, KAI v0.17 takes the gang from MIN-SUBGROUP, the number of sub-groups that must each reach their own minMember)`)
	}
	fmt.Fprintln(w, "\nPODGROUP\tROLE\tPODS\tGPUS/POD\tGPUS")
	for _, pg := range pgs {
		var roles []roleGPUs
		if err := json.Unmarshal([]byte(pg.Annotations[kaikeys.RoleGPUs]), &roles); err != nil {
			return fmt.Errorf("PodGroup %s: annotation %s: %w", pg.Name, kaikeys.RoleGPUs, err)
		}
		for _, r := range roles {
			fmt.Fprintf(w, "%s\t%s\t%d\t%g\t%g\n", pg.Name, r.Role, r.Pods, r.GPUsPerPod, r.GPUs)
		}
	}
	fmt.Fprintln(w, "\nPOD\tPODGROUP\tSUB-GROUP")
	for _, p := range pods {
		fmt.Fprintf(w, "%s\t%s\t%s\n", p.Name, p.Annotations[kaikeys.PodGroupName], orDash(p.Labels[kaikeys.SubGroupName]))
	}
	return w.Flush()
}

// owner is a PodGroup's owner as kind/name.
func owner(pg *v2alpha2.PodGroup) string {
	if len(pg.OwnerReferences) == 0 {
		return "-"
	}
	return pg.OwnerReferences[0].Kind + "/" + pg.OwnerReferences[0].Name
}

// num formats an optional count, "-" when unset.
func num(p *int32) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(int(*p))
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
