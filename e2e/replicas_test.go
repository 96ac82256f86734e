//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestTwoReplicasOneWriter: two grouper replicas with leader election against the same API
// server, told apart by their user agents (the API server records each writer as a managedFields
// manager). Only the leader writes PodGroups and pods; when it stops, the other takes over and
// writes. They group pods of their own scheduler name, so the shared grouper stays out.
func TestTwoReplicasOneWriter(t *testing.T) {
	ctx := context.Background()
	const scheduler = "le-scheduler"
	ns := "replicas"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	ensureCustomJobDefinition(t, ctx)

	type replica struct {
		name string
		stop func()
		g    *framework.Grouper
	}
	start := func(name string) *replica {
		o := app.DefaultOptions()
		o.SchedulerName = scheduler
		o.LeaderElect, o.LeaderElectionNamespace, o.LeaderElectionID = true, "default", "gangmap-e2e-replicas"
		o.SkipControllerNameValidation = true
		cfg := rest.CopyConfig(cp.Config)
		cfg.UserAgent = name
		rctx, cancel := context.WithCancel(ctx)
		g, err := cp.RunGrouper(rctx, o, cfg)
		require.NoError(t, err)
		var once sync.Once
		stop := func() {
			once.Do(func() {
				cancel()
				select {
				case err := <-g.Done:
					assert.NoError(t, err, "replica %s stopped", name)
				case <-time.After(30 * time.Second):
					t.Errorf("replica %s did not stop", name)
				}
			})
		}
		t.Cleanup(stop)
		return &replica{name: name, stop: stop, g: g}
	}
	a, b := start("gangmap-replica-a"), start("gangmap-replica-b")
	leader, follower := waitLeader(t, a.g, b.g), (*framework.Grouper)(nil)
	byGrouper := map[*framework.Grouper]*replica{a.g: a, b.g: b}
	if leader == a.g {
		follower = b.g
	} else {
		follower = a.g
	}
	lead, follow := byGrouper[leader], byGrouper[follower]
	t.Logf("leader %s, follower %s", lead.name, follow.name)

	job := createCustomJob(t, ctx, ns, "replicas", 2, scheduler)
	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	var pods []*corev1.Pod
	for i, role := range []string{"coordinator", "worker", "worker"} {
		p := customJobPod(t, job, role, fmt.Sprintf("replicas-%s-%d", role, i))
		require.NoError(t, cp.Client.Create(ctx, p))
		pods = append(pods, p)
	}
	for _, p := range pods {
		_, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, timeout)
		require.NoError(t, err)
	}
	pg := &v2alpha2.PodGroup{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgName}, pg))
	assert.Contains(t, managers(pg), lead.name)
	assert.NotContains(t, managers(pg), follow.name, "the follower never wrote the PodGroup")
	for _, p := range pods {
		got := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(p), got))
		assert.Contains(t, managers(got), lead.name, p.Name)
		assert.NotContains(t, managers(got), follow.name, "the follower never wrote pod %s", p.Name)
	}

	// The leader stops (releasing its Lease): the follower takes over and writes.
	lead.stop()
	t.Logf("%s stopped", lead.name)
	select {
	case <-follower.Manager.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("the follower did not take over")
	}
	require.NoError(t, cp.Client.Patch(ctx, job, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"worker":{"replicas":3}}}`))))
	p := customJobPod(t, job, "worker", "replicas-worker-3")
	require.NoError(t, cp.Client.Create(ctx, p))
	got, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, timeout)
	require.NoError(t, err)
	assert.Equal(t, pgName, got.Annotations[kaikeys.PodGroupName])
	assert.Contains(t, managers(got), follow.name, "the new leader wrote the new pod")
	assert.NotContains(t, managers(got), lead.name)
	pg = waitWorkerMinMember(t, ctx, ns, pgName, 3)
	assert.Contains(t, managers(pg), follow.name, "the new leader updated the PodGroup")
}

// waitLeader waits until one of the groupers is elected and checks the other is not.
func waitLeader(t *testing.T, a, b *framework.Grouper) *framework.Grouper {
	t.Helper()
	var leader, other *framework.Grouper
	select {
	case <-a.Manager.Elected():
		leader, other = a, b
	case <-b.Manager.Elected():
		leader, other = b, a
	case <-time.After(30 * time.Second):
		t.Fatal("no replica was elected")
	}
	time.Sleep(time.Second)
	select {
	case <-other.Manager.Elected():
		t.Fatal("both replicas are leaders")
	default:
	}
	return leader
}

// managers lists the managedFields managers of obj: who wrote it.
func managers(obj client.Object) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		out = append(out, m.Manager)
	}
	return out
}
