package findings

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"

	"github.com/gangmap/gangmap/podgrouper/runtime/kaitopology"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
)

// staticTopologies is a fixed kaitopology.Lookup: the API is served, every Topology given exists.
type staticTopologies map[string]kaitopology.Topology

func (s staticTopologies) Topology(name string) (kaitopology.Topology, bool, bool) {
	t, ok := s[name]
	return t, ok, true
}

func (s staticTopologies) Served() bool { return true }

// The segment example of KAI's docs/topology/segments.md on the seed JobSet's workers: 4 workers
// (JobSet completion indexes), segments of 2 with a required rack, the Topology named on the
// workload: two segment sub-groups workers-0 and workers-1 with one constraint.
var segmented = struct{ workload, template map[string]string }{
	workload: map[string]string{"kai.scheduler/topology": "cluster-topology"},
	template: map[string]string{"kai.scheduler/segment-size": "2", "kai.scheduler/segment-topology-required-placement": "rack"},
}

// A request the plan cannot honour is a TopologyUnresolved finding at once, carrying the plan's
// reason (gang/topology.go workloadTopology: levels without kai.scheduler/topology), and it clears
// when the workload's next plan has no such request.
func TestTopologyUnresolved(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	p := seedPlanWith(t, 2, map[string]string{"kai.scheduler/topology-required-placement": "rack"}, nil)
	require.Len(t, p.TopologyIssues, 1)
	tr.SetPlan(p, Definition{Name: "d"}, t0)
	fs := evaluate(t, tr, t0, cfg)
	require.Equal(t, []string{"TopologyUnresolved"}, reasons(fs))
	require.Contains(t, fs[0].Message, "names no KAI Topology (kai.scheduler/topology)")
	require.Contains(t, fs[0].Message, "required rack")

	// A role's issue is a finding of that role (its label in the plan): segments asked of the workers with no Topology.
	p = seedPlanWith(t, 4, nil, segmented.template)
	require.Len(t, p.TopologyIssues, 1)
	tr.SetPlan(p, Definition{Name: "d"}, t0)
	fs = evaluate(t, tr, t0, cfg)
	require.Equal(t, []string{"TopologyUnresolved(replicatedjob[workers])"}, reasons(fs))
	require.Contains(t, fs[0].Message, "segments of 2 pods")

	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0)
	require.Empty(t, evaluate(t, tr, t0, cfg))
}

// A constraint naming a Topology the cluster lacks, or a level the Topology lacks, is a
// TopologyNotFound finding naming the PodGroup field and the Topology's levels; a level given by
// its node label or its alias passes (KAI cluster_info.go buildAliasMapsByTopology, topology
// plugin calculateRelevantDomainLevels). Nothing is said while the Topologies are unknown.
func TestTopologyNotFound(t *testing.T) {
	p := seedPlanWith(t, 4, segmented.workload, segmented.template)
	require.Empty(t, p.TopologyIssues)
	pg := p.PodGroups[0].Name
	evalWith := func(l kaitopology.Lookup) []Finding {
		tr := NewTrackerIn(podbook.New())
		tr.Topologies = l
		tr.SetPlan(p, Definition{Name: "d"}, t0)
		return evaluate(t, tr, t0, cfg)
	}
	require.Empty(t, evalWith(nil))
	require.Empty(t, evalWith(&kaitopology.Watcher{}), "not synced: unknown")

	fs := evalWith(staticTopologies{})
	require.Equal(t, []string{"TopologyNotFound(workers-0)"}, reasons(fs))
	require.Equal(t, "PodGroup "+pg+` spec.subGroups[workers-0].topologyConstraint (and 1 more sub-group(s) with the same constraint).topology names Topology "cluster-topology", but no KAI Topology of that name exists: KAI leaves the sub-group unscheduled ("Requested topology cluster-topology does not exist"); create the Topology or fix kai.scheduler/topology`, fs[0].Message)

	zoneOnly := staticTopologies{"cluster-topology": {Name: "cluster-topology", Levels: []kaitopology.Level{{NodeLabel: "topology.kubernetes.io/zone"}, {NodeLabel: "kubernetes.io/hostname", Alias: "host"}}}}
	fs = evalWith(zoneOnly)
	require.Equal(t, []string{"TopologyNotFound(workers-0)"}, reasons(fs))
	require.Contains(t, fs[0].Message, `spec.subGroups[workers-0].topologyConstraint (and 1 more sub-group(s) with the same constraint).requiredTopologyLevel "rack" is not a level of Topology "cluster-topology", whose levels are topology.kubernetes.io/zone, kubernetes.io/hostname (alias host)`)

	byLabel := staticTopologies{"cluster-topology": {Name: "cluster-topology", Levels: []kaitopology.Level{{NodeLabel: "zone"}, {NodeLabel: "rack"}}}}
	require.Empty(t, evalWith(byLabel))
	byAlias := staticTopologies{"cluster-topology": {Name: "cluster-topology", Levels: []kaitopology.Level{{NodeLabel: "example.com/rack", Alias: "rack"}}}}
	require.Empty(t, evalWith(byAlias))
}

// The PodGroup's own constraint (the workload's annotations) is checked too, as a finding of no
// role, naming both its levels the Topology lacks; the workers' own constraint (their pod
// template's required rack) is one of the levels and passes.
func TestTopologyNotFoundPodGroupLevels(t *testing.T) {
	p := seedPlanWith(t, 2, map[string]string{"kai.scheduler/topology": "cluster-topology", "kai.scheduler/topology-required-placement": "zone", "kai.scheduler/topology-preferred-placement": "host"},
		map[string]string{"kai.scheduler/topology-required-placement": "rack"})
	tr := NewTrackerIn(podbook.New())
	tr.Topologies = staticTopologies{"cluster-topology": {Name: "cluster-topology", Levels: []kaitopology.Level{{NodeLabel: "rack"}}}}
	tr.SetPlan(p, Definition{Name: "d"}, t0)
	fs := evaluate(t, tr, t0, cfg)
	require.Equal(t, []string{"TopologyNotFound"}, reasons(fs))
	pg := p.PodGroups[0].Name
	require.Contains(t, fs[0].Message, "PodGroup "+pg+` spec.topologyConstraint.preferredTopologyLevel "host" and PodGroup `+pg+` spec.topologyConstraint.requiredTopologyLevel "zone" are not levels of Topology "cluster-topology", whose levels are rack`)
}

// topologySwitch is a Lookup whose one Topology can be created during a test.
type topologySwitch struct{ exists bool }

func (s *topologySwitch) Topology(name string) (kaitopology.Topology, bool, bool) {
	if !s.exists || name != "cluster-topology" {
		return kaitopology.Topology{}, false, true
	}
	return kaitopology.Topology{Name: name, Levels: []kaitopology.Level{{NodeLabel: "rack"}}}, true, true
}

func (s *topologySwitch) Served() bool { return true }

// The Reporter sends a TopologyNotFound finding as a Warning Event on the workload (and its Karta)
// and counts it in gangmap_gang_findings, and when the Topology is created (the Watcher's next
// snapshot) clears it with a GangFindingCleared Event that says so.
func TestReporterSendsAndClearsTopologyNotFound(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	sw := &topologySwitch{}
	tr.Topologies = sw
	tr.SetPlan(seedPlanWith(t, 4, segmented.workload, segmented.template), Definition{Name: "topology-test", KartaUID: "k-uid"}, t0)
	rec := record.NewFakeRecorder(10)
	r := &Reporter{Tracker: tr, Config: cfg, Recorder: rec, DryRun: true, Now: func() time.Time { return t0 }}
	g := Gauge.WithLabelValues("JobSet", "topology-test", string(TopologyNotFound))

	r.Tick(context.Background())
	require.Len(t, rec.Events, 2)
	assert.Contains(t, <-rec.Events, `Warning TopologyNotFound role workers-0: PodGroup pg-`+uid+`-jobset spec.subGroups[workers-0].topologyConstraint (and 1 more sub-group(s) with the same constraint).topology names Topology "cluster-topology", but no KAI Topology of that name exists`)
	assert.Contains(t, <-rec.Events, "Warning TopologyNotFound JobSet ns/")
	assert.Equal(t, 1.0, testutil.ToFloat64(g))

	sw.exists = true
	r.Tick(context.Background())
	require.Len(t, rec.Events, 2)
	assert.Contains(t, <-rec.Events, "Normal GangFindingCleared TopologyNotFound (role workers-0) cleared: the KAI Topology and the levels the constraints name now exist")
	<-rec.Events
	assert.Equal(t, 0.0, testutil.ToFloat64(g))
}
