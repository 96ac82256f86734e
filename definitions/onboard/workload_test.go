package onboard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

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

// TestWorkloadEveryCatalogManifest onboards every real manifest of the catalog's test data (the
// frameworks' own samples; see definitions/catalog/testdata) and checks, from the definition's
// own reading of the result (definitions.Resolve, as `gangmap plan`), that every role's template
// names kai-scheduler and carries the queue label, and that nothing else changed: the result,
// with exactly the reported fields taken out again, equals the input.
func TestWorkloadEveryCatalogManifest(t *testing.T) {
	reg := catalogRegistry(t)
	files, err := filepath.Glob("../catalog/testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	onboarded := 0
	for _, f := range files {
		objs, err := manifest.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objs {
			c := reg.Lookup(u.GroupVersionKind())
			if c == nil {
				continue
			}
			t.Run(filepath.Base(f)+"/"+u.GetName(), func(t *testing.T) {
				checkOnboarded(t, reg, c, u.Object)
			})
			onboarded++
		}
	}
	if onboarded < 40 {
		t.Fatalf("onboarded %d catalog manifests, want every one (at least 40)", onboarded)
	}
}

// noSchedulerField are the catalog kinds whose definitions name no field the operator copies into
// its pods' spec.schedulerName, so `gangmap onboard` must refuse them (the grouper's onboarding
// policy sets it on their pods instead).
var noSchedulerField = map[string]string{
	// NIMServiceSpec has labels and annotations but no schedulerName
	// (k8s-nim-operator api/apps/v1alpha1/nimservice_types.go).
	"NIMService": "spec.structureDefinition.rootComponent.specDefinition.fragmentedPodSpecDefinition.schedulerNamePath",
	// The catalog's TrainJob definition reads the trainer's container only (spec.trainer).
	"TrainJob": "spec.structureDefinition.childComponents[0].specDefinition.fragmentedPodSpecDefinition.schedulerNamePath",
	// The catalog's Milvus definition names each component's podLabels only.
	"Milvus": "spec.gangmap.components[name=component].onboard.schedulerNamePath",
}

func checkOnboarded(t *testing.T, reg *definitions.Registry, c *definitions.Compiled, obj map[string]any) {
	ctx := context.Background()
	before := jsonCopy(t, obj)
	s := podSettings()
	s.OverrideScheduler = true // lws-volcano-worker-only-size4 names Volcano
	res, err := onboard.Workload(ctx, c, reg.Compiler(), obj, s, onboard.Settings{Labels: map[string]string{queueKey: "team-a"}})
	if field, ok := noSchedulerField[c.RootGVK().Kind]; ok {
		if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "gives no path for the pod's schedulerName") {
			t.Fatalf("err = %v, want the missing %s named", err, field)
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
	w, err := c.Resolve(ctx, res.Object)
	if err != nil {
		t.Fatalf("plan of the onboarded workload: %v", err)
	}
	roles := 0
	for _, rc := range w.Components {
		for _, inst := range rc.Instances {
			if inst.Template == nil || len(inst.Template.Spec.Containers) == 0 {
				continue
			}
			roles++
			if rc.Component.Onboard != nil {
				continue // a template the definition builds: checked through the written places below
			}
			if got := inst.Template.Spec.SchedulerName; got != "kai-scheduler" {
				t.Errorf("%s/%s: scheduler name %q, want kai-scheduler", rc.Component.Name, inst.ID, got)
			}
		}
	}
	if roles == 0 {
		// a RayJob on an existing cluster (clusterSelector) has no pod template of its own
		if len(res.Roles) != 0 {
			t.Errorf("no role found by the definition, but %d written", len(res.Roles))
		}
	}
	for _, r := range res.Roles {
		for _, ch := range r.Changes {
			if ch.Path[len(ch.Path)-1] == "schedulerName" && ch.New != "kai-scheduler" {
				t.Errorf("%s: scheduler name set to %q", ch.Path, ch.New)
			}
		}
	}
	undo(t, res)
	if !reflect.DeepEqual(jsonCopy(t, res.Object), before) {
		t.Errorf("onboarding changed more than it reported")
	}
}

// undo takes the reported changes out of res.Object again: removes each field that was absent
// and puts back each old value, then drops the maps that only onboarding created.
func undo(t *testing.T, res *onboard.Result) {
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
