package onboard_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/definitions/onboard"
)

// sidecarKarta's workers take the template's fields, but its sidecar pods (spec.sidecar) are
// built by the operator with no scheduler name of the workload's.
const sidecarKarta = `
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: sidecar}
spec:
  structureDefinition:
    rootComponent:
      name: job
      kind: {group: example.com, version: v1, kind: Sidecar}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
    childComponents:
      - name: worker
        ownerRef: job
        specDefinition:
          podTemplateSpecPath: .spec.template
        scaleDefinition:
          replicasPath: .spec.replicas
  gangmap:
    components:
      - name: worker
        onboard:
          unreachable:
            - pods: sidecar pods
              when: '.spec.sidecar == true'
              fields: [schedulerName]
              reason: the operator builds them from a fixed template
`

func sidecarJob(sidecar bool) map[string]any {
	return map[string]any{"apiVersion": "example.com/v1", "kind": "Sidecar", "metadata": map[string]any{"name": "s"},
		"spec": map[string]any{"replicas": int64(2), "sidecar": sidecar,
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c"}}}}}}
}

// TestWorkloadUnreachablePods: pods the operator gives no scheduler name refuse the workload only
// when they exist (when) and the settings set that field; the refusal names the component, the
// pods, the definition field and the reason, and points to the onboarding policy.
func TestWorkloadUnreachablePods(t *testing.T) {
	reg := registryWith(t, sidecarKarta)
	c := reg.Lookup(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Sidecar"})
	if c == nil {
		t.Fatalf("definition not registered: %v", reg.Problems())
	}
	ctx := context.Background()

	res, err := onboard.Workload(ctx, c, reg.Compiler(), sidecarJob(false), podSettings(), onboard.Settings{})
	if err != nil {
		t.Fatalf("without sidecar pods: %v", err)
	}
	if len(res.Roles) != 1 || len(res.Roles[0].Changes) == 0 {
		t.Fatalf("roles %+v, want the worker template onboarded", res.Roles)
	}

	_, err = onboard.Workload(ctx, c, reg.Compiler(), sidecarJob(true), podSettings(), onboard.Settings{})
	if err == nil {
		t.Fatal("with sidecar pods: onboarded, want a refusal")
	}
	for _, want := range []string{"component worker, sidecar pods: the operator has no field in the workload for their schedulerName",
		"spec.gangmap.components[0].onboard.unreachable[0]", "the operator builds them from a fixed template",
		onboard.PolicyHint, "nothing written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "gives no path") {
		t.Errorf("refusal %q repeats the field as a missing path", err)
	}

	// annotations only: the sidecar pods need nothing the operator withholds
	if _, err := onboard.Workload(ctx, c, reg.Compiler(), sidecarJob(true), onboard.Settings{Annotations: map[string]string{"a": "b"}}, onboard.Settings{}); err != nil {
		t.Errorf("annotations only: %v", err)
	}
}

// TestUnreachableEntriesValidated: an entry without pods or reason, or naming a field onboarding
// does not set, is a definition error with its field path.
func TestUnreachableEntriesValidated(t *testing.T) {
	bad := strings.Replace(sidecarKarta, `            - pods: sidecar pods
              when: '.spec.sidecar == true'
              fields: [schedulerName]
              reason: the operator builds them from a fixed template`, `            - fields: [schedulerName, nodeSelector]`, 1)
	defs, err := definitions.Decode(strings.NewReader(bad), "test", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	compiler, err := expr.NewCompiler(expr.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = definitions.Compile(defs[0], compiler)
	if err == nil {
		t.Fatal("compiled, want errors")
	}
	for _, want := range []string{"spec.gangmap.components[0].onboard.unreachable[0].pods: Required value",
		"spec.gangmap.components[0].onboard.unreachable[0].reason: Required value",
		`spec.gangmap.components[0].onboard.unreachable[0].fields[1]: Unsupported value: "nodeSelector"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
