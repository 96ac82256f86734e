package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/itchyny/gojq"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kaiKartaGroup is what the stand-in groups a pod by when KAI's Karta fallback would take it.
type kaiKartaGroup struct {
	name      string
	minMember int32
}

// alphaKarta returns the stand-in's grouping of pod by an alpha-form Karta that KAI v0.17's Karta
// hub sees for the top owner's kind, or nil when there is none (then the default grouper's). It
// copies, without KAI's code:
//   - KAI pkg/podgrouper/podgrouper/plugins/karta/hub.go getKartaForGvk: Kartas listed by the
//     labels run.ai/karta-group, run.ai/karta-version and run.ai/karta-kind of the top owner's
//     GVK, with gangScheduling; exactly one must match;
//   - grouper.go GetPodGroupMetadata: the alpha path only when gangScheduling.podGroup is unset;
//   - grouper.go getPodGroupMetadataAlpha and calcPodGroupName: the member's groupByKeyPaths
//     evaluated on the pod (Karta pkg/resource/pod_querier.go ExtractGroupKeys: one result each,
//     not null and not "", formatted with %v), name "pg-<top owner UID>" plus "-" and the values
//     joined with "-", refused unless a DNS-1123 subdomain (validatePodGroupNameFromGroupingKeys);
//   - minMember: Karta's CalculateSubtreeScale of the member's component, restricted to the
//     shapes the e2e definitions use: its own replicasPath, else the sum of its direct children's.
//
// Simplified: the member is the first one, in definition order, whose filters all hold on the pod
// (KAI first infers the pod's component and prefers members naming it directly).
func (k *KAIPodGrouper) alphaKarta(ctx context.Context, pod *corev1.Pod, top *metav1.PartialObjectMetadata) (*kaiKartaGroup, error) {
	gvk := top.GroupVersionKind()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("run.ai/v1alpha1")
	list.SetKind("KartaList")
	if err := k.client.List(ctx, list, client.MatchingLabels{"run.ai/karta-group": gvk.Group, "run.ai/karta-version": gvk.Version, "run.ai/karta-kind": gvk.Kind}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil // no Karta CRD: KAI's hub remembers it missing and uses the default grouper
		}
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, nil
	}
	karta := list.Items[0].Object
	if _, v2, _ := unstructured.NestedMap(karta, "spec", "optimizationInstructions", "gangScheduling", "podGroup"); v2 {
		return nil, nil
	}
	groups, _, _ := unstructured.NestedSlice(karta, "spec", "optimizationInstructions", "gangScheduling", "podGroups")
	podMap, err := jsonMap(pod)
	if err != nil {
		return nil, err
	}
	member, err := firstPassingMember(groups, podMap)
	if err != nil || member == nil {
		return nil, err
	}
	paths, _, _ := unstructured.NestedStringSlice(member, "groupByKeyPaths")
	var keys []string
	for _, p := range paths {
		v, err := jqOne(p, podMap)
		if err != nil {
			return nil, fmt.Errorf("group key path %q: %w", p, err)
		}
		if v == nil || v == "" {
			return nil, fmt.Errorf("group key path %q: query result is empty", p)
		}
		keys = append(keys, fmt.Sprintf("%v", v))
	}
	name := fmt.Sprintf("pg-%s", top.UID)
	if len(keys) > 0 {
		name += "-" + strings.Join(keys, "-")
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("grouping keys %v produce invalid PodGroup name %q", keys, name)
		}
	}
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(gvk)
	if err := k.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: top.Name}, owner); err != nil {
		return nil, err
	}
	comp, _, _ := unstructured.NestedString(member, "componentName")
	ownerMap, err := jsonMap(owner.Object)
	if err != nil {
		return nil, err
	}
	scale, err := subtreeScale(karta, comp, ownerMap)
	if err != nil {
		return nil, err
	}
	return &kaiKartaGroup{name: name, minMember: scale}, nil
}

func firstPassingMember(groups []any, pod map[string]any) (map[string]any, error) {
	for _, g := range groups {
		members, _, _ := unstructured.NestedSlice(g.(map[string]any), "members")
		for _, m := range members {
			mem := m.(map[string]any)
			filters, _, _ := unstructured.NestedStringSlice(mem, "filters")
			pass := true
			for _, f := range filters {
				v, err := jqOne(f, pod)
				if err != nil {
					return nil, err
				}
				pass = pass && v == true
			}
			if pass {
				return mem, nil
			}
		}
	}
	return nil, nil
}

// subtreeScale is the member component's replicasPath on the owner, else the sum of its direct
// children's (see alphaKarta).
func subtreeScale(karta map[string]any, comp string, owner map[string]any) (int32, error) {
	root, _, _ := unstructured.NestedMap(karta, "spec", "structureDefinition", "rootComponent")
	children, _, _ := unstructured.NestedSlice(karta, "spec", "structureDefinition", "childComponents")
	replicas := func(c map[string]any) (int32, error) {
		p, ok, _ := unstructured.NestedString(c, "scaleDefinition", "replicasPath")
		if !ok {
			return 0, nil
		}
		v, err := jqOne(p, owner)
		if err != nil {
			return 0, err
		}
		n, _ := v.(int)
		if f, ok := v.(float64); ok {
			n = int(f)
		}
		return int32(n), nil
	}
	all := append([]any{root}, children...)
	for _, c := range all {
		cm := c.(map[string]any)
		if cm["name"] != comp {
			continue
		}
		if n, err := replicas(cm); err != nil || n > 0 {
			return n, err
		}
		var sum int32
		for _, ch := range children {
			if chm := ch.(map[string]any); chm["ownerRef"] == comp {
				n, err := replicas(chm)
				if err != nil {
					return 0, err
				}
				sum += n
			}
		}
		return sum, nil
	}
	return 0, fmt.Errorf("component %q not in the Karta", comp)
}

// jsonMap is v as gojq takes it (JSON numbers as float64), as Karta's jq runner reads objects.
func jsonMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(b, &out)
}

// jqOne evaluates a jq query on v and returns its single result.
func jqOne(query string, v map[string]any) (any, error) {
	q, err := gojq.Parse(query)
	if err != nil {
		return nil, err
	}
	iter := q.Run(v)
	var out []any
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := r.(error); ok {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("expected a single query result, got %d", len(out))
	}
	return out[0], nil
}
