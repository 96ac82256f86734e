package app

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/podgrouper/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/findings"
)

// healthOf reads the grouper's findings for obj from the gangmap.io/health annotation of the
// PodGroups it owns (the grouper writes the same value on each): nil when no PodGroup of obj
// carries it (never a finding, a grouper in dry-run, or an older grouper).
func healthOf(obj *unstructured.Unstructured, pgs []*v2alpha2.PodGroup) *findings.Health {
	for _, pg := range pgs {
		owned := false
		for _, ref := range pg.OwnerReferences {
			owned = owned || ref.UID == obj.GetUID()
		}
		v, ok := pg.Annotations[findings.HealthAnnotation]
		if !owned || !ok {
			continue
		}
		h, err := findings.ParseHealth(v)
		if err != nil {
			return &findings.Health{Findings: []findings.Finding{{Reason: "Unreadable", Message: err.Error()}}}
		}
		return h
	}
	return nil
}

// findingsColumn is get's FINDINGS column: the findings' reasons (and roles), None when the
// workload's PodGroups say healthy or carry no health yet, - without a PodGroup.
func (v *workloadView) findingsColumn() string {
	if len(v.Findings) > 0 {
		return findings.Summary(v.Findings)
	}
	if len(v.PodGroups) == 0 {
		return "-"
	}
	return "None"
}
