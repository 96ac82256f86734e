package sources

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// logLines records the messages a logger was given.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, `"msg"="`+msg+`"`) {
			n++
		}
	}
	return n
}

func karta(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("testdata/customjob-karta.yaml")
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(b, &u.Object))
	u.SetName(name)
	return u
}

// The cluster source loads the Kartas once at start (the initial list's change signal is covered
// by the first sync, not a second one), and again on each later change.
func TestClusterSyncsOnceAtStart(t *testing.T) {
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{definitions.GroupVersionResource: "KartaList"}, karta(t, "customjob"))
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: definitions.APIVersion,
		APIResources: []metav1.APIResource{{Name: definitions.Resource, Kind: "Karta"}}}}
	compiler, err := expr.NewCompiler(expr.Limits{})
	require.NoError(t, err)
	reg := definitions.NewRegistry(compiler)

	logs := &logLines{}
	log := funcr.New(func(prefix, args string) {
		logs.mu.Lock()
		logs.lines = append(logs.lines, args)
		logs.mu.Unlock()
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), log))
	defer cancel()
	c := &Cluster{Registry: reg, Dynamic: dyn, Discovery: disc}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()

	gvk := schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}
	require.Eventually(t, c.Synced, 10*time.Second, 10*time.Millisecond)
	assert.NotNil(t, reg.Lookup(gvk), "synced means the first list's Kartas are in the registry")
	// Long enough for a second, redundant sync to have happened if one were queued.
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, 1, logs.count("Cluster definitions loaded"), "one sync at start: %q", logs.lines)

	// A later change is loaded by a sync of its own.
	err = dyn.Resource(definitions.GroupVersionResource).Delete(ctx, "customjob", metav1.DeleteOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return reg.Lookup(gvk) == nil }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, 2, logs.count("Cluster definitions loaded"))

	cancel()
	require.NoError(t, <-done)
}

// A Karta with an unknown field (replicaPath, misspelt) that the Karta CRD kept is left out with
// a Warning Event in strict mode (the grouper's default); lenient, it is used.
func TestClusterStrictRefusesUnknownFields(t *testing.T) {
	for _, strict := range []bool{true, false} {
		k := karta(t, "customjob")
		cs, _, _ := unstructured.NestedSlice(k.Object, "spec", "structureDefinition", "childComponents")
		cs[1].(map[string]any)["scaleDefinition"] = map[string]any{"replicaPath": ".spec.worker.replicas"}
		require.NoError(t, unstructured.SetNestedSlice(k.Object, cs, "spec", "structureDefinition", "childComponents"))
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{definitions.GroupVersionResource: "KartaList"}, k)
		disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
		disc.Resources = []*metav1.APIResourceList{{GroupVersion: definitions.APIVersion,
			APIResources: []metav1.APIResource{{Name: definitions.Resource, Kind: "Karta"}}}}
		compiler, err := expr.NewCompiler(expr.Limits{})
		require.NoError(t, err)
		reg := definitions.NewRegistry(compiler)
		rec := record.NewFakeRecorder(10)
		ctx, cancel := context.WithCancel(context.Background())
		c := &Cluster{Registry: reg, Dynamic: dyn, Discovery: disc, Recorder: rec, Strict: strict}
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		gvk := schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}
		if strict {
			select {
			case ev := <-rec.Events:
				assert.Contains(t, ev, "InvalidDefinition")
				assert.Contains(t, ev, "spec.structureDefinition.childComponents[1].scaleDefinition.replicaPath: unknown field (strict mode")
			case <-time.After(10 * time.Second):
				t.Fatal("no Warning Event for the unknown field")
			}
			assert.Nil(t, reg.Lookup(gvk), "left out")
		} else {
			require.Eventually(t, func() bool { return reg.Lookup(gvk) != nil }, 10*time.Second, 10*time.Millisecond)
		}
		cancel()
		require.NoError(t, <-done)
	}
}

// Synced: while discovery fails (the API server unreachable), the source is not synced: a kind's
// only definition may be a Karta not read yet. Once the API server answers that it does not serve
// run.ai/v1alpha1 (NotFound), it is: no Karta can exist to wait for.
func TestClusterSyncedWithoutKartaAPI(t *testing.T) {
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	var answering atomic.Bool
	disc.AddReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !answering.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil // the fake then answers NotFound: no such group version
	})
	compiler, err := expr.NewCompiler(expr.Limits{})
	require.NoError(t, err)
	c := &Cluster{Registry: definitions.NewRegistry(compiler), Discovery: disc, CRDPoll: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	time.Sleep(100 * time.Millisecond)
	assert.False(t, c.Synced(), "a discovery error is not an answer")
	answering.Store(true)
	require.Eventually(t, c.Synced, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}
