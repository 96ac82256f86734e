package gang

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/gangmap/gangmap/definitions"
)

// podLabelRef matches a pod label read in a jq or CEL pod expression: .metadata.labels["k"],
// .metadata.labels.k, pod.metadata.labels["k"]. Expressions come from definitions (bounded text).
var podLabelRef = regexp.MustCompile(`metadata\??\.labels\??(?:\[\s*"([^"]+)"\s*\]|\.([A-Za-z0-9_]+))`)

// labelRefs lists the pod labels an expression source reads.
func labelRefs(src string) sets.Set[string] {
	out := sets.New[string]()
	for _, m := range podLabelRef.FindAllStringSubmatch(src, -1) {
		out.Insert(m[1] + m[2])
	}
	return out
}

// alphaReplicaComponent: in the alpha form, a gang is split per replica of a component when a
// member's groupByKeyPaths (or groupByExpressions) read the pod label that the member's (or an
// ancestor's) podSelector.replicaSelector reads: upstream's LWS definition groups by the group
// index its "group" component selects replicas by, Grove's by the PodCliqueSet replica index. A
// replicaSelector the keys do not read (Dynamo's scaling-group index, while it groups by the
// component name) splits nothing, as in KAI, whose PodGroups are one per grouping-key value.
func alphaReplicaComponent(c *definitions.Compiled) *definitions.Component {
	gs := c.Loaded.Karta.Spec.OptimizationInstructions.GangScheduling
	if gs == nil || gs.PodGroup != nil {
		return nil
	}
	for _, g := range gs.PodGroups {
		for _, m := range g.Members {
			keys := sets.New[string]()
			for _, e := range append(append([]definitions.Expr(nil), m.GroupByKeyPaths...), m.GroupByExpressions...) {
				keys = keys.Union(labelRefs(e.String()))
			}
			for a := c.Component(m.ComponentName); a != nil; a = a.Parent {
				if a.ReplicaKey != nil && keys.HasAny(sets.List(labelRefs(a.ReplicaKey.Source()))...) {
					return a
				}
			}
		}
	}
	return nil
}

// alphaUnsplittable says why an alpha gang cannot be split per replica of component rc (or ""):
// its replicas cannot be counted when it has other than one instance (Grove's cliques) or when a
// role of the gang is outside it (Grove's scaling groups beside its cliques). The gang is then
// one PodGroup for all replicas: every replica is required together, which never admits a part
// of one replica.
func (p *Plan) alphaUnsplittable(rc *definitions.ResolvedComponent, specs []*gangSpec) string {
	comp := rc.Component
	const kai = "KAI's fallback makes one PodGroup per grouping-key value, each sized by one member's CalculateSubtreeScale"
	if len(rc.Instances) != 1 {
		return fmt.Sprintf("the alpha pod group's keys read the replica key of %q, which has %d instances, so its replicas cannot be counted; gangmap plans one PodGroup for all replicas (all required together; %s); to gang each replica, add spec.gangmap.gang.perReplicaOf naming a component that counts the replicas", comp.Name, len(rc.Instances), kai)
	}
	for _, gs := range specs {
		for _, r := range gs.roles {
			if r.component != comp && !comp.IsAncestorOf(r.component) {
				return fmt.Sprintf("the alpha pod group's keys read the replica key of %q, but role %s is not under it, so gangmap cannot share it per replica; one PodGroup holds all replicas (all required together; %s); to gang each replica, add spec.gangmap.gang.perReplicaOf naming a component above every role", comp.Name, roleLabel(r), kai)
			}
		}
	}
	return ""
}

// alphaReplicaCount is the number of per-replica gangs of an alpha definition: the per-replica
// component's own count n when it divides every role under it, else the greatest common divisor
// of those roles' replica counts (upstream's LWS "group" counts the group size, while its leader
// counts the groups and its worker groups × (size − 1): 2 groups of size 4 give 4, 2 and 6, and 2
// gangs). The choice is noted when the two disagree.
func (p *Plan) alphaReplicaCount(n int64) int64 {
	var g int64
	var parts []string
	divides := n > 0
	for _, r := range p.Roles {
		if r.component != p.perReplica && !p.perReplica.IsAncestorOf(r.component) {
			continue
		}
		if r.Replicas > 0 {
			g = gcd(g, r.Replicas)
		}
		parts = append(parts, fmt.Sprintf("%s %d", roleLabel(r), r.Replicas))
		if n > 0 && (r.Pods%n != 0 || r.GangPods%n != 0) {
			divides = false
		}
	}
	switch {
	case divides || g == 0:
		if g != 0 && g != n {
			p.Notes = append(p.Notes, fmt.Sprintf("%s's replicasPath gives %d replicas, but its roles' replica counts (%s) have the common divisor %d; gangmap plans %d per-replica gangs", p.perReplica.Name, n, strings.Join(parts, ", "), g, n))
		}
		return n
	default:
		p.Notes = append(p.Notes, fmt.Sprintf("%s's replicasPath gives %d, which does not divide its roles' replica counts (%s) evenly; gangmap plans %d per-replica gangs, their greatest common divisor (KAI's fallback sizes the gang at CalculateSubtreeScale(%s): %d × the sum of its roles, an overcount)", p.perReplica.Name, n, strings.Join(parts, ", "), g, p.perReplica.Name, n))
		return g
	}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
