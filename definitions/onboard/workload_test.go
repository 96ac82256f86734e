package onboard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/definitions/onboard"
	"github.com/gangmap/gangmap/manifest"
)

const queueKey = "kai.scheduler/queue"

func catalogRegistry(t *testing.T) *definitions.Registry {
	t.Helper()
	c, err := expr.NewCompiler(expr.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	reg := definitions.NewRegistry(c)
	if err := catalog.Register(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

// podSettings are the `gangmap onboard --scheduler-name kai-scheduler --queue team-a --label
// team=a` settings.
func podSettings() onboard.Settings {
	return onboard.Settings{SchedulerName: "kai-scheduler", OptionalLabels: map[string]string{queueKey: "team-a"}}
}

// TestWorkloadEveryCatalogKind iterates the catalog: every kind it defines must have real
// manifests in the catalog's test data (the frameworks' own samples; see
// definitions/catalog/testdata), and each is onboarded and then read back by its definition
// (definitions.Resolve, as `gangmap plan`): every role's template, found or built by the
// definition, names kai-scheduler; every role carries the queue, on its template where onboarding
// wrote a label there, else on the workload (KAI reads the top owner's queue label first); and
// nothing else changed: the result, with exactly the reported fields taken out again, equals the
// input (parsed objects compared). A kind whose operator has no way to set a role's scheduler
// name is refused with that said for the role (unreachableRoles).
func TestWorkloadEveryCatalogKind(t *testing.T) {
	reg := catalogRegistry(t)
	defs, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../catalog/testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	type sample struct {
		file string
		obj  *unstructured.Unstructured
	}
	byKind := map[schema.GroupVersionKind][]sample{}
	for _, f := range files {
		objs, err := manifest.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objs {
			byKind[u.GroupVersionKind()] = append(byKind[u.GroupVersionKind()], sample{filepath.Base(f), u})
		}
	}
	for _, d := range defs {
		c := reg.Lookup(d.Karta.Spec.StructureDefinition.RootComponent.Kind.GVK())
		if c == nil || c.Name() != d.Name() {
			t.Fatalf("catalog definition %s is not active: %v", d.Name(), reg.Problems())
		}
		t.Run(c.Name(), func(t *testing.T) {
			samples := byKind[c.RootGVK().GVK()]
			if len(samples) == 0 {
				t.Fatalf("no manifest of %s in definitions/catalog/testdata: add a real sample of the framework there", c.RootGVK().GVK())
			}
			for _, sm := range samples {
				t.Run(sm.file+"/"+sm.obj.GetName(), func(t *testing.T) {
					checkOnboarded(t, reg, c, sm.file, sm.obj.Object)
				})
			}
		})
	}
}

// unreachableRoles are the roles whose operator offers no field of the workload for the pods'
// scheduler name (read in the operators' code), by kind, with what the refusal must say; when
// only some manifests of a kind have such roles, manifests names them.
var unreachableRoles = map[string]struct {
	manifests map[string]bool
	want      []string
}{
	// Kubeflow Trainer: no TrainJob pod override names a scheduler (kubeflow/trainer
	// pkg/apis/trainer/v1alpha1/trainjob_types.go: v2.0 PodSpecOverride, v2.1
	// PodTemplateSpecOverride, v2.2+ PodSpecPatch).
	"TrainJob": {want: []string{"component node, training node pods: the operator has no field in the workload for their schedulerName",
		"component initializer, dataset and model initializer pods", "trainjob_types.go", "onboarding policy"}},
	// NIM operator: a multi-node NIMService's LeaderWorkerSet workerTemplate takes neither
	// spec.schedulerName nor spec.labels (k8s-nim-operator manifests/lws.yaml).
	"NIMService": {manifests: map[string]bool{"nimservice-multinode-deepseek-pp2.yaml": true},
		want: []string{"component nimservice, multi-node worker pods: the operator has no field in the workload for their schedulerName (",
			"manifests/lws.yaml", "onboarding policy"}},
	// spark-operator: spec.batchScheduler wins over the roles' schedulerName (sparkpod_defaulter.go
	// addSchedulerName), so the written driver/executor schedulerName would be ignored: the
	// read-back refuses it (TestWorkloadSparkBatchScheduler).
	"SparkApplication": {manifests: map[string]bool{"sparkapplication-volcano-batchscheduler.yaml": true},
		want: []string{`component driver: written, but the definition reads scheduler name "volcano"`}},
}

func checkOnboarded(t *testing.T, reg *definitions.Registry, c *definitions.Compiled, file string, obj map[string]any) {
	ctx := context.Background()
	before := jsonCopy(t, obj)
	s := podSettings()
	s.OverrideScheduler = true // lws-volcano-worker-only-size4 names Volcano
	res, err := onboard.Workload(ctx, c, reg.Compiler(), obj, s, onboard.Settings{Labels: map[string]string{queueKey: "team-a"}})
	if u, ok := unreachableRoles[c.RootGVK().Kind]; ok && (u.manifests == nil || u.manifests[file]) {
		if err == nil {
			t.Fatal("onboarded, want a refusal naming the roles the operator gives no scheduler name")
		}
		for _, w := range u.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("refusal %q lacks %q", err, w)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("onboard: %v", err)
	}
	if !reflect.DeepEqual(jsonCopy(t, obj), before) {
		t.Fatal("the input object was modified")
	}
	if got := labelOf(res.Object, queueKey); got != "team-a" {
		t.Errorf("workload queue label %q, want team-a (KAI reads the top owner's queue label first)", got)
	}
	queueWritten := map[string]bool{} // components whose templates got the queue label
	for _, r := range res.Roles {
		for _, ch := range r.Changes {
			if ch.Path[len(ch.Path)-1] == queueKey {
				queueWritten[r.Component] = true
			}
		}
	}
	w, err := c.Resolve(ctx, res.Object)
	if err != nil {
		t.Fatalf("plan of the onboarded workload: %v", err)
	}
	roles := 0
	for _, rc := range w.Components {
		for _, inst := range rc.Instances {
			if !onboard.IsRole(inst) {
				continue
			}
			roles++
			if got := inst.Template.Spec.SchedulerName; got != "kai-scheduler" {
				t.Errorf("%s/%s: plan reads scheduler name %q, want kai-scheduler", rc.Component.Name, inst.ID, got)
			}
			if got, ok := inst.Template.Labels[queueKey]; ok || queueWritten[rc.Component.Name] {
				if got != "team-a" {
					t.Errorf("%s/%s: plan reads queue label %q, want team-a", rc.Component.Name, inst.ID, got)
				}
			}
		}
	}
	if roles == 0 && len(res.Roles) != 0 {
		// a RayJob on an existing cluster (clusterSelector) has no pod template of its own
		t.Errorf("no role found by the definition, but %d written", len(res.Roles))
	}
	for _, r := range res.Roles {
		for _, ch := range r.Changes {
			if ch.Path[len(ch.Path)-1] == "schedulerName" && ch.New != "kai-scheduler" {
				t.Errorf("%s: scheduler name set to %q", ch.Path, ch.New)
			}
		}
	}
	undo(t, res, before)
	if !reflect.DeepEqual(jsonCopy(t, res.Object), before) {
		t.Errorf("onboarding changed more than it reported")
	}
}

// undo takes the reported changes out of res.Object again: removes each field that was absent
// and puts back each old value, then drops the maps that only onboarding created (emptied maps
// that are not in before, the object as it was: a Milvus "components: {}" stays).
func undo(t *testing.T, res *onboard.Result, before map[string]any) {
	t.Helper()
	all := res.Workload
	for _, r := range res.Roles {
		all = append(all, r.Changes...)
	}
	for _, ch := range all {
		parent := walk(t, res.Object, ch.Path[:len(ch.Path)-1])
		key := ch.Path[len(ch.Path)-1].(string)
		if ch.Absent {
			delete(parent, key)
		} else {
			parent[key] = ch.Old
		}
	}
	for _, ch := range all {
		// a map that onboarding created is empty now: remove it, and any emptied parent it made
		for p := ch.Path[:len(ch.Path)-1]; len(p) > 0; p = p[:len(p)-1] {
			parent := walk(t, res.Object, p[:len(p)-1])
			if parent == nil {
				break // removed already, with an earlier change's emptied map
			}
			key, ok := p[len(p)-1].(string)
			if m, isMap := parent[key].(map[string]any); !ok || !isMap || len(m) > 0 {
				break
			}
			if orig := walk(t, before, p[:len(p)-1]); orig != nil {
				if _, existed := orig[key]; existed {
					break
				}
			}
			delete(parent, key)
		}
	}
}

func walk(t *testing.T, doc map[string]any, p onboard.Path) map[string]any {
	t.Helper()
	var cur any = doc
	for _, e := range p {
		switch k := e.(type) {
		case string:
			m, _ := cur.(map[string]any)
			cur = m[k]
		case int:
			cur = cur.([]any)[k]
		}
	}
	m, _ := cur.(map[string]any)
	return m
}

func labelOf(obj map[string]any, key string) string {
	md, _ := obj["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	s, _ := l[key].(string)
	return s
}

// jsonCopy is obj normalized (int64 and int compare equal) and copied.
func jsonCopy(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	m, err := expr.FromObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWorkloadNotAPath: a template expression that builds a new object cannot be written through;
// the error names the component and the definition field, and nothing is returned.
func TestWorkloadNotAPath(t *testing.T) {
	def, err := os.ReadFile("testdata/built-karta.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := registryWith(t, string(def))
	c := reg.Lookup(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Built"})
	if c == nil {
		t.Fatalf("definition not registered: %v", reg.Problems())
	}
	obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Built", "metadata": map[string]any{"name": "b"},
		"spec": map[string]any{"replicas": int64(2), "containers": []any{map[string]any{"name": "c"}}}}
	_, err = onboard.Workload(context.Background(), c, reg.Compiler(), obj, podSettings(), onboard.Settings{})
	var oe *onboard.Error
	if !errors.As(err, &oe) {
		t.Fatalf("err = %v, want *onboard.Error", err)
	}
	msg := err.Error()
	for _, want := range []string{"component worker", "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath", "not a plain path", "nothing written"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

// TestWorkloadOtherScheduler: a role that names another scheduler (Volcano) is refused without
// override and rewritten with it.
func TestWorkloadOtherScheduler(t *testing.T) {
	reg := catalogRegistry(t)
	objs, err := manifest.ReadFile("../catalog/testdata/jobset-group-names.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := objs[0]
	setScheduler(t, u.Object, "volcano")
	c := reg.Lookup(u.GroupVersionKind())
	_, err = onboard.Workload(context.Background(), c, reg.Compiler(), u.Object, podSettings(), onboard.Settings{})
	if err == nil || !strings.Contains(err.Error(), `names scheduler "volcano"`) {
		t.Fatalf("err = %v, want the volcano scheduler named", err)
	}
	s := podSettings()
	s.OverrideScheduler = true
	res, err := onboard.Workload(context.Background(), c, reg.Compiler(), u.Object, s, onboard.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	var old []string
	for _, r := range res.Roles {
		for _, ch := range r.Changes {
			if ch.Path[len(ch.Path)-1] == "schedulerName" {
				old = append(old, ch.Old)
			}
		}
	}
	if len(old) == 0 || old[0] != "volcano" {
		t.Fatalf("scheduler changes from %v, want from volcano", old)
	}
}

func setScheduler(t *testing.T, obj map[string]any, name string) {
	t.Helper()
	rjs := obj["spec"].(map[string]any)["replicatedJobs"].([]any)
	spec := rjs[0].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	spec["schedulerName"] = name
}

func registryWith(t *testing.T, yamlDef string) *definitions.Registry {
	t.Helper()
	defs, err := definitions.Decode(strings.NewReader(yamlDef), "test", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := expr.NewCompiler(expr.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	reg := definitions.NewRegistry(c)
	reg.SetSource(definitions.SourceFile, defs)
	return reg
}

// TestWorkloadInheritedScheduler: a Milvus component without a schedulerName of its own runs
// under the shared spec.components.schedulerName (milvus-operator MergeComponentSpec,
// pkg/controllers/components.go), so a shared "volcano" makes every component another
// scheduler's: refused without override, though each component's own field is empty; with
// override every component gets kai-scheduler, which wins over the shared one, and the plan
// reads it.
func TestWorkloadInheritedScheduler(t *testing.T) {
	reg := catalogRegistry(t)
	objs, err := manifest.ReadFile("../catalog/testdata/milvus-cluster-components-map-resources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := objs[0]
	if err := unstructured.SetNestedField(u.Object, "volcano", "spec", "components", "schedulerName"); err != nil {
		t.Fatal(err)
	}
	c := reg.Lookup(u.GroupVersionKind())
	ctx := context.Background()
	_, err = onboard.Workload(ctx, c, reg.Compiler(), u.Object, podSettings(), onboard.Settings{})
	if err == nil || !strings.Contains(err.Error(), `component component (instance "datanode"): it names scheduler "volcano"`) {
		t.Fatalf("err = %v, want every component named as volcano's", err)
	}
	s := podSettings()
	s.OverrideScheduler = true
	res, err := onboard.Workload(ctx, c, reg.Compiler(), u.Object, s, onboard.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Resolve(ctx, res.Object)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, inst := range w.Component("component").Instances {
		n++
		if got := inst.Template.Spec.SchedulerName; got != "kai-scheduler" {
			t.Errorf("%s: plan reads %q, want kai-scheduler", inst.ID, got)
		}
	}
	// The sample's eight (Milvus 2.5.16 with coordinators: MilvusComponents), and standalone,
	// which the operator deploys in cluster mode at 0 replicas (GetComponentsBySpec,
	// defaultComponentsReplicas): its template is onboarded too, for when it is scaled up.
	if n != 9 {
		t.Errorf("%d components, want the sample's 8 (dataCoord, dataNode, indexCoord, indexNode, proxy, queryCoord, queryNode, rootCoord) and standalone", n)
	}
}

// TestWorkloadSparkBatchScheduler: spark-operator sets a SparkApplication pod's scheduler from
// spec.batchScheduler when it is set, and from the role's schedulerName only otherwise
// (internal/webhook/sparkpod_defaulter.go addSchedulerName: "Preferred to use `BatchScheduler`
// if application spec has it configured"). So an application with batchScheduler volcano runs
// its pods under Volcano whatever driver.schedulerName says: onboarding refuses it (it names
// another scheduler) and, with override, fails its read-back instead of writing a
// driver.schedulerName the operator ignores.
func TestWorkloadSparkBatchScheduler(t *testing.T) {
	reg := catalogRegistry(t)
	objs, err := manifest.ReadFile("../catalog/testdata/sparkapplication-volcano-batchscheduler.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := objs[0]
	c := reg.Lookup(u.GroupVersionKind())
	ctx := context.Background()
	_, err = onboard.Workload(ctx, c, reg.Compiler(), u.Object, podSettings(), onboard.Settings{})
	if err == nil || !strings.Contains(err.Error(), `component driver: it names scheduler "volcano"`) ||
		!strings.Contains(err.Error(), `component executor: it names scheduler "volcano"`) {
		t.Fatalf("err = %v, want driver and executor named as volcano's", err)
	}
	s := podSettings()
	s.OverrideScheduler = true
	_, err = onboard.Workload(ctx, c, reg.Compiler(), u.Object, s, onboard.Settings{})
	if err == nil || !strings.Contains(err.Error(), `component driver: written, but the definition reads scheduler name "volcano"`) {
		t.Fatalf("err = %v, want the read-back to find volcano still in force", err)
	}
	// It says where it wrote and where the definition reads (issue 31 point 7).
	if !strings.Contains(err.Error(), "(written at ") || !strings.Contains(err.Error(), "; the definition reads the role's template from a fragmented pod spec") {
		t.Fatalf("err = %v, want where it was written and where the definition reads", err)
	}

	// Without batchScheduler the roles' own fields are written and read back.
	unstructured.RemoveNestedField(u.Object, "spec", "batchScheduler")
	res, err := onboard.Workload(ctx, c, reg.Compiler(), u.Object, podSettings(), onboard.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"driver", "executor"} {
		got, _, _ := unstructured.NestedString(res.Object, "spec", role, "schedulerName")
		if got != "kai-scheduler" {
			t.Errorf("spec.%s.schedulerName = %q, want kai-scheduler", role, got)
		}
	}
}
