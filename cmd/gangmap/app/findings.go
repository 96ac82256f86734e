package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

// setHealth gives v the grouper's findings on obj from the gangmap.io/health annotation of the
// first of pgs obj owns that carries it (the grouper writes the same value on each): those the
// annotation lists, and how many more it counts (a negative count, not the grouper's, is taken as
// none). Without the annotation (never a finding, a grouper in dry-run, or an older grouper) v is
// left as it is.
func (v *workloadView) setHealth(obj *unstructured.Unstructured, pgs []*v2alpha2.PodGroup) {
	for _, pg := range pgs {
		owned := slices.ContainsFunc(pg.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == obj.GetUID() })
		if a, ok := pg.Annotations[findings.HealthAnnotation]; owned && ok {
			h, err := findings.ParseHealth(a)
			if err != nil {
				h = &findings.Health{Findings: []findings.Finding{{Reason: "Unreadable", Message: err.Error()}}}
			}
			v.Findings, v.FindingsOmitted = h.Findings, max(h.Omitted, 0)
			return
		}
	}
}

// findingsColumn is get's FINDINGS column: the findings' reasons (and roles) and "+N more" for
// those the annotation counts without listing them, None when the workload's PodGroups say
// healthy or carry no health yet, - without a PodGroup.
func (v *workloadView) findingsColumn() string {
	more := fmt.Sprintf("+%d more", v.FindingsOmitted)
	switch {
	case v.FindingsOmitted > 0 && len(v.Findings) == 0:
		return more
	case v.FindingsOmitted > 0:
		return findings.Summary(v.Findings) + ", " + more
	case len(v.Findings) == 0 && len(v.PodGroups) == 0:
		return "-"
	}
	return findings.Summary(v.Findings) // None when there is none
}

// clusterFindings summarises, per definition ("name (source)", the PodGroups'
// gangmap.io/definition), the grouper's current findings on the cluster's PodGroups: one line
// per reason with the number of workloads affected and an example. A definition with findings
// on several workloads is almost surely wrong, and the line says so. Findings an annotation
// counts without listing them (past the first findings.MaxHealthFindings) have no reason to count
// them by: one more line per definition says how many, on how many workloads.
func (c *kubeClients) clusterFindings(ctx context.Context) (map[string][]string, error) {
	pgs, err := c.listPodGroups(ctx, "")
	if errors.Is(err, errNoPodGroupCRD) {
		return nil, nil // no PodGroup CRD: nothing to summarise
	}
	if err != nil {
		return nil, err
	}
	type key struct{ definition, reason string }
	workloads := map[key]map[string]string{} // owner UID -> "ns/name"
	var order []key
	omitted := map[string]map[string]string{} // definition -> owner UID -> "ns/name"
	omittedCount := map[string]int{}
	for _, pg := range pgs {
		def, ok := pg.Annotations[kaikeys.Definition]
		v, has := pg.Annotations[findings.HealthAnnotation]
		if !ok || !has || len(pg.OwnerReferences) == 0 {
			continue
		}
		h, err := findings.ParseHealth(v)
		if err != nil {
			continue
		}
		owner := pg.OwnerReferences[0]
		workload := fmt.Sprintf("%s %s/%s", owner.Kind, pg.Namespace, owner.Name)
		if h.Omitted > 0 && omitted[def][string(owner.UID)] == "" {
			// Once per workload: each of its PodGroups carries the same annotation.
			if omitted[def] == nil {
				omitted[def] = map[string]string{}
			}
			omitted[def][string(owner.UID)] = workload
			omittedCount[def] += h.Omitted
		}
		for _, f := range h.Findings {
			k := key{def, string(f.Reason)}
			if workloads[k] == nil {
				workloads[k] = map[string]string{}
				order = append(order, k)
			}
			workloads[k][string(owner.UID)] = workload
		}
	}
	out := map[string][]string{}
	for _, k := range order {
		ws := workloads[k]
		line := fmt.Sprintf("findings: %s on %d workload(s), e.g. %s (gangmap describe shows it; docs/findings.md says how to fix the definition)", k.reason, len(ws), firstOf(ws))
		if len(ws) > 1 {
			line += "; on several workloads the definition is almost surely wrong"
		}
		out[k.definition] = append(out[k.definition], line)
	}
	for def, ws := range omitted {
		out[def] = append(out[def], fmt.Sprintf("findings: %d more, not listed by reason (a workload's %s annotation lists its first %d), on %d workload(s), e.g. %s (gangmap describe says how many)",
			omittedCount[def], findings.HealthAnnotation, findings.MaxHealthFindings, len(ws), firstOf(ws)))
	}
	return out, nil
}

// firstOf returns the least of m's values (m is not empty): the example a line names, the same
// at every run.
func firstOf(m map[string]string) string {
	return slices.Min(slices.Collect(maps.Values(m)))
}
