package gang

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// buildAlphaPodGroups plans the PodGroups of the alpha podGroups form as KAI v0.17's Karta
// fallback makes them (KAI pkg/podgrouper/podgrouper/plugins/karta/grouper.go,
// getPodGroupMetadataAlpha): a pod's PodGroup is named by the top owner's UID and the pod's values
// of its member's grouping keys only (calcPodGroupName), never by the alpha group's name. So:
//   - the shares of all roles whose pods give the same values are one PodGroup, even across alpha
//     groups (two groups without keys are both "pg-<UID>"); its minMember is the sum of their
//     gang pods, and the plan says so, since KAI sizes it at the member of the pod it grouped last;
//   - a group whose roles give different values is several PodGroups, each requiring only its
//     own roles (KAI's rule; the plan says the gang is not all-or-nothing across them).
//
// The values are predicted per role (and replica) on the role's pod template with the labels the
// definition's pod selectors give its pods (alphaPredictedPod); a key the plan cannot read is
// shown as {<expression>} and assumed to give every pod of the workload the same value. Each pod
// is named by its own values in Assign, exactly as KAI names it.
func (p *Plan) buildAlphaPodGroups(ctx context.Context, c *definitions.Compiled, specs []*gangSpec, keys []string, budget *planBudget) error {
	byName := map[string]*PodGroup{}
	gangsOf := map[*PodGroup][]string{}
	for _, gs := range specs {
		for _, key := range keys {
			for _, r := range gs.roles {
				m, err := p.share(r, int64(len(keys)))
				if err != nil {
					return err
				}
				if m.pods == 0 {
					continue // nothing to group: never a PodGroup with a made-up size
				}
				name, err := p.alphaPlannedName(ctx, c, r, key)
				if err != nil {
					return err
				}
				pg := byName[name]
				if pg == nil {
					if err := budget.take(1, ""); err != nil {
						return err
					}
					pg = &PodGroup{Name: name, Gang: gs.name, Replica: key, SubGroups: []*SubGroup{}}
					byName[name] = pg
					p.PodGroups = append(p.PodGroups, pg)
				}
				if !slices.Contains(gangsOf[pg], gs.name) {
					gangsOf[pg] = append(gangsOf[pg], gs.name)
				}
				if err := budget.take(1, ""); err != nil {
					return err
				}
				pg.members = append(pg.members, m)
				p.gangIndex.set(gangKey{gang: gs.name, replica: key, role: r}, pg)
				r.gang, r.grouped = gs.name, true
			}
		}
	}
	for _, pg := range p.PodGroups {
		if err := pg.finish(); err != nil {
			return err
		}
		if gangs := gangsOf[pg]; len(gangs) > 1 {
			p.Notes = append(p.Notes, fmt.Sprintf("alpha pod groups %s are one PodGroup, %s: KAI's fallback names a PodGroup by the top owner's UID and the pod's grouping-key values only (calcPodGroupName), so it merges them; gangmap follows it and requires all their pods together (minMember %d), where KAI sizes it at the member of whichever pod it grouped last", quoteAll(gangs), pg.Name, *pg.MinMember))
		}
	}
	p.noteAlphaSplits(specs, keys)
	return nil
}

// noteAlphaSplits says where one alpha group's roles are in several PodGroups.
func (p *Plan) noteAlphaSplits(specs []*gangSpec, keys []string) {
	for _, gs := range specs {
		for _, key := range keys {
			var names []string
			for _, r := range gs.roles {
				if pg := p.gangIndex.get(gangKey{gang: gs.name, replica: key, role: r}); pg != nil && !slices.Contains(names, pg.Name) {
					names = append(names, pg.Name)
				}
			}
			if len(names) > 1 {
				p.Notes = append(p.Notes, fmt.Sprintf("alpha pod group %q is %d PodGroups (%s): its roles' pods give different grouping-key values, and KAI's fallback makes one PodGroup per value (calcPodGroupName); gangmap follows it, so each requires only its own roles and the group is not all-or-nothing across them; to gang them together, group them by a key their pods share, or use the podGroup form", gs.name, len(names), strings.Join(names, ", ")))
			}
		}
	}
}

// alphaPlannedName is the name of the PodGroup of role r (replica key) in the alpha form: its
// member's grouping keys evaluated on alphaPredictedPod. A key that gives no single non-empty
// value there (a label the operator sets) is written {<expression>}, with a note once per key.
func (p *Plan) alphaPlannedName(ctx context.Context, c *definitions.Compiled, r *Role, key string) (string, error) {
	progs := c.AlphaKeyPrograms(p.alphaMember[r])
	if len(progs) == 0 {
		return AlphaPodGroupName(p.ownerKey), nil
	}
	pod, err := p.alphaPredictedPod(r, key)
	if err != nil {
		return "", err
	}
	values := make([]string, 0, len(progs))
	unknown := false
	for _, prog := range progs {
		v, err := definitions.EvalAlphaKey(ctx, prog, pod)
		if err != nil {
			v, unknown = "{"+prog.Source()+"}", true
			note := fmt.Sprintf("the PodGroup name takes the value of grouping key %s from each pod (the plan cannot read it before the pods exist); the plan assumes every pod of the workload it is read on gives the same value", prog.Source())
			if !slices.Contains(p.Notes, note) {
				p.Notes = append(p.Notes, note)
			}
		}
		values = append(values, v)
	}
	if unknown {
		return KAIAlphaName(p.ownerKey, values...), nil
	}
	name := AlphaPodGroupName(p.ownerKey, values...)
	if kai := KAIAlphaName(p.ownerKey, values...); name != kai {
		p.Notes = append(p.Notes, fmt.Sprintf("role %s: the grouping-key values %q give %q, not a DNS-1123 subdomain, so KAI's fallback groups these pods nowhere (validatePodGroupNameFromGroupingKeys); gangmap names the PodGroup %s", roleLabel(r), values, kai, name))
	}
	return name, nil
}

// alphaPredictedPod is role r's pod as far as the plan knows it: its pod template, with the pod
// labels its pod selectors imply for this role (KAI's fallback reads them on the pod): the
// component's componentTypeSelector value and matchLabels, its instance id where
// componentInstanceSelector reads a label, and the replica key where the per-replica
// component's replicaSelector reads one.
func (p *Plan) alphaPredictedPod(r *Role, key string) (map[string]any, error) {
	pod, err := templatePod(r)
	if err != nil {
		return nil, err
	}
	md, _ := pod["metadata"].(map[string]any)
	md = maps.Clone(md)
	if md == nil {
		md = map[string]any{}
	}
	labels := map[string]any{}
	if l, ok := md["labels"].(map[string]any); ok {
		maps.Copy(labels, l)
	}
	for a := r.component; a != nil; a = a.Parent {
		if l := plainLabel(a.TypeKey); l != "" && a.TypeValue != nil {
			labels[l] = *a.TypeValue
		}
		for k, v := range a.MatchLabels {
			labels[k] = v
		}
		if l := plainLabel(a.InstanceKey); l != "" && a == r.component && r.Instance != "" {
			labels[l] = r.Instance
		}
		if l := plainLabel(a.ReplicaKey); l != "" && a == p.perReplica && key != "" {
			labels[l] = key
		}
	}
	md["labels"] = labels
	out := maps.Clone(pod)
	out["metadata"] = md
	return out, nil
}

// plainLabelRef matches an expression that is only a read of one pod label (jq or CEL).
var plainLabelRef = regexp.MustCompile(`^\s*(?:pod)?\.metadata\.labels(?:\[\s*"([^"]+)"\s*\]|\.([A-Za-z0-9_]+))\s*$`)

// plainLabel returns the pod label a selector expression reads when that is all it does, else "".
func plainLabel(p expr.Program) string {
	if p == nil {
		return ""
	}
	if m := plainLabelRef.FindStringSubmatch(p.Source()); m != nil {
		return m[1] + m[2]
	}
	return ""
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " and ")
}
