package definitions

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// fragments assembles a pod template from a fragmentedPodSpecDefinition: containers from
// containersPath and containerPath; resourcesPath applies to a container of its own when no
// container declared resources (upstream CLI rule); labels, annotations, scheduler name, priority
// class, affinities and resource claims from their paths.
func (r *resolver) fragments(comp *Component, rc *ResolvedComponent) error {
	fp := comp.Path.Child("specDefinition", "fragmentedPodSpecDefinition")
	n := len(rc.Instances)
	vals := map[string][]any{}
	for name, prog := range comp.Fragments {
		v, err := r.values(comp, prog, fp.Child(name), n)
		if err != nil {
			return err
		}
		vals[name] = v
	}
	for i, inst := range rc.Instances {
		tpl := &corev1.PodTemplateSpec{}
		found := false
		dec := func(name string, into any) error {
			v := vals[name]
			if v == nil || v[i] == nil {
				return nil
			}
			found = true
			if err := fromValue(v[i], into); err != nil {
				return fmt.Errorf("%s%s: %w", fp.Child(name), instanceSuffix(inst), err)
			}
			return nil
		}
		var containers []corev1.Container
		var one corev1.Container
		var res corev1.ResourceRequirements
		var aff corev1.Affinity
		var podAff corev1.PodAffinity
		var nodeAff corev1.NodeAffinity
		steps := []struct {
			name string
			into any
		}{
			{"containersPath", &containers}, {"containerPath", &one}, {"resourcesPath", &res},
			{"labelsPath", &tpl.Labels}, {"annotationsPath", &tpl.Annotations},
			{"schedulerNamePath", &tpl.Spec.SchedulerName}, {"priorityClassNamePath", &tpl.Spec.PriorityClassName},
			{"resourceClaimsPath", &tpl.Spec.ResourceClaims}, {"podAffinityPath", &podAff}, {"nodeAffinityPath", &nodeAff},
		}
		for _, s := range steps {
			if err := dec(s.name, s.into); err != nil {
				return err
			}
		}
		if !found && inst.Replicas == nil {
			continue
		}
		// No fragment resolved but the replicasPath did: the component is in the object with
		// every pod field left to the operator's defaults (a Milvus component with only
		// replicas), so its pods are a template of defaults, not an absent role.
		if vals["containerPath"] != nil && vals["containerPath"][i] != nil {
			containers = append(containers, one)
		}
		declared := false
		for _, c := range containers {
			if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
				declared = true
			}
		}
		if !declared && (len(res.Requests) > 0 || len(res.Limits) > 0) {
			if len(containers) == 0 {
				containers = append(containers, corev1.Container{Name: comp.Name})
			}
			containers[0].Resources = res
		}
		if vals["podAffinityPath"] != nil && vals["podAffinityPath"][i] != nil {
			aff.PodAffinity = &podAff
		}
		if vals["nodeAffinityPath"] != nil && vals["nodeAffinityPath"][i] != nil {
			aff.NodeAffinity = &nodeAff
		}
		if aff.PodAffinity != nil || aff.NodeAffinity != nil {
			tpl.Spec.Affinity = &aff
		}
		tpl.Spec.Containers = containers
		inst.Template = tpl
	}
	return nil
}

// fromValue decodes a JSON value (object, list or scalar) into a typed value. Fragments are
// resolved once per workload generation, so a JSON round trip is affordable here.
func fromValue(v any, into any) error {
	if m, ok := v.(map[string]any); ok {
		return fromMap(m, into)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}
