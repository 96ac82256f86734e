package realkai

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// Placement is where a set of pods stands: Bound have a spec.nodeName (KAI's binder bound them,
// i.e. KAI admitted and placed them), Pending have none. Finished pods (Succeeded, Failed) that
// are bound are in Bound.
type Placement struct {
	Bound, Pending []corev1.Pod
}

// Names are the pods' names, sorted.
func names(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// String is "bound [a b], pending [c]".
func (p Placement) String() string {
	return fmt.Sprintf("bound %v, pending %v", names(p.Bound), names(p.Pending))
}

// Place lists the pods of namespace matching sel and splits them by spec.nodeName.
func (c *Cluster) Place(ctx context.Context, namespace string, sel labels.Selector) (Placement, error) {
	var list corev1.PodList
	if err := c.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return Placement{}, err
	}
	var p Placement
	for _, pod := range list.Items {
		if pod.Spec.NodeName != "" {
			p.Bound = append(p.Bound, pod)
		} else {
			p.Pending = append(p.Pending, pod)
		}
	}
	return p, nil
}

// WaitAllBound waits until namespace has at least want pods matching sel and every one is bound,
// and returns them. On timeout (or a KAI process exiting) the error has Report's diagnosis.
func (c *Cluster) WaitAllBound(ctx context.Context, namespace string, sel labels.Selector, want int, timeout time.Duration) (Placement, error) {
	var last Placement
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.CheckRunning(); err != nil {
			return false, err
		}
		p, err := c.Place(ctx, namespace, sel)
		if err != nil {
			return false, nil // a slow list near the deadline is a timeout, not the failure
		}
		last = p
		return len(p.Bound)+len(p.Pending) >= want && len(p.Pending) == 0, nil
	})
	if wait.Interrupted(err) {
		err = fmt.Errorf("timed out after %v", timeout)
	}
	if err != nil {
		return last, fmt.Errorf("waiting for %d pods of %s (%s) to be bound: %w; %s\n%s", want, namespace, sel, err, last, c.Report(ctx, namespace))
	}
	return last, nil
}

// ErrBoundPartly says pods were bound that the test expected to stay pending.
var ErrBoundPartly = errors.New("pods were bound")

// AssertNoneBound polls for period and fails (ErrBoundPartly, with Report) as soon as a pod of
// namespace matching sel has a node. It returns the placement seen last.
func (c *Cluster) AssertNoneBound(ctx context.Context, namespace string, sel labels.Selector, period time.Duration) (Placement, error) {
	deadline := time.Now().Add(period)
	var last Placement
	for {
		if err := c.CheckRunning(); err != nil {
			return last, err
		}
		p, err := c.Place(ctx, namespace, sel)
		if err != nil {
			return last, err
		}
		last = p
		if len(p.Bound) > 0 {
			return p, fmt.Errorf("%w: %s\n%s", ErrBoundPartly, p, c.Report(ctx, namespace))
		}
		if time.Now().After(deadline) {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ErrPartialGang says some but not all pods of a gang were bound.
var ErrPartialGang = errors.New("part of the gang was bound")

// AssertAllOrNone polls for period and fails (ErrPartialGang, with Report) as soon as some but
// not all of the total pods of namespace matching sel are bound; it returns the last placement.
func (c *Cluster) AssertAllOrNone(ctx context.Context, namespace string, sel labels.Selector, total int, period time.Duration) (Placement, error) {
	deadline := time.Now().Add(period)
	var last Placement
	for {
		if err := c.CheckRunning(); err != nil {
			return last, err
		}
		p, err := c.Place(ctx, namespace, sel)
		if err != nil {
			return last, err
		}
		last = p
		if len(p.Bound) > 0 && len(p.Bound) < total {
			return p, fmt.Errorf("%w: %d of %d: %s\n%s", ErrPartialGang, len(p.Bound), total, p, c.Report(ctx, namespace))
		}
		if time.Now().After(deadline) {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Report describes a namespace for a failure message: each pod (node, phase, PodGroup and
// sub-group), each PodGroup (spec and KAI's status), and the scheduler's and binder's log lines
// naming the namespace (the last 15 each), then the last lines of each KAI process's log.
func (c *Cluster) Report(ctx context.Context, namespace string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- namespace %s\n", namespace)
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s node=%q phase=%s podgroup=%q subgroup=%q\n", p.Name, p.Spec.NodeName, p.Status.Phase,
			p.Annotations[kaikeys.PodGroupName], p.Labels[kaikeys.SubGroupName])
	}
	var pgs v2alpha2.PodGroupList
	if err := c.Client.List(ctx, &pgs, client.InNamespace(namespace)); err != nil {
		fmt.Fprintf(&b, "podgroups: %v\n", err)
	}
	for _, pg := range pgs.Items {
		out, _ := yaml.Marshal(map[string]any{"spec": pg.Spec, "status": pg.Status, "annotations": pg.Annotations})
		fmt.Fprintf(&b, "podgroup %s:\n%s", pg.Name, indent(string(out)))
	}
	for _, p := range c.Processes() {
		if lines := p.Grep(15, namespace); len(lines) > 0 {
			fmt.Fprintf(&b, "--- %s log lines naming %s (%s):\n%s\n", p.Name, namespace, p.LogPath, strings.Join(lines, "\n"))
		}
	}
	for _, p := range c.Processes() {
		fmt.Fprintf(&b, "--- last lines of %s (%s):\n%s\n", p.Name, p.LogPath, p.Tail(10))
	}
	return b.String()
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = "    " + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}
