package realkai

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// permissiveVersion is a CRD version with no schema (x-kubernetes-preserve-unknown-fields) and a
// status subresource: a stand-in for an operator's CRD where what matters is the workload's
// manifest, not the operator's validation.
func permissiveVersion(name string, storage bool) map[string]any {
	return map[string]any{"name": name, "served": true, "storage": storage,
		"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		"subresources": map[string]any{"status": map[string]any{}}}
}

// EnsureServed makes the API server serve the namespaced kind gvk: when a CRD of its group and
// kind is installed (e.g. the e2e suites' own), gvk's version is added to it if missing (served,
// not stored: permissiveVersion); otherwise a permissive CRD is created for it (plural: the
// lower-case kind + "s", gvk's version stored). It returns once the version lists.
func (c *Cluster) EnsureServed(ctx context.Context, gvk schema.GroupVersionKind) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(crdGVK.GroupVersion().WithKind("CustomResourceDefinitionList"))
	if err := c.Client.List(ctx, list); err != nil {
		return err
	}
	var existing string
	for _, crd := range list.Items {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		if group == gvk.Group && kind == gvk.Kind {
			existing = crd.GetName()
		}
	}
	if existing == "" {
		if err := c.createPermissiveCRD(ctx, gvk); err != nil {
			return err
		}
	} else if err := c.addVersion(ctx, existing, gvk.Version); err != nil {
		return err
	}
	err := framework.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return c.Client.List(ctx, l) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s is not served: %w", gvk, err)
	}
	return nil
}

func (c *Cluster) createPermissiveCRD(ctx context.Context, gvk schema.GroupVersionKind) error {
	plural := strings.ToLower(gvk.Kind) + "s"
	crd := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"group": gvk.Group, "scope": "Namespaced",
			"names":    map[string]any{"plural": plural, "kind": gvk.Kind, "listKind": gvk.Kind + "List"},
			"versions": []any{permissiveVersion(gvk.Version, true)}},
	}}
	crd.SetGroupVersionKind(crdGVK)
	crd.SetName(plural + "." + gvk.Group)
	if g := gvk.Group; g == "k8s.io" || strings.HasSuffix(g, ".k8s.io") || strings.HasSuffix(g, ".kubernetes.io") {
		crd.SetAnnotations(map[string]string{"api-approved.kubernetes.io": "unapproved, an e2e test's schemaless stand-in"})
	}
	if err := c.Client.Create(ctx, crd); err != nil {
		return fmt.Errorf("CRD %s: %w", crd.GetName(), err)
	}
	return nil
}

func (c *Cluster) addVersion(ctx context.Context, name, version string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(crdGVK)
		if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return err
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			if n, _, _ := unstructured.NestedString(v.(map[string]any), "name"); n == version {
				return nil
			}
		}
		versions = append(versions, permissiveVersion(version, false))
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			return err
		}
		return c.Client.Update(ctx, crd)
	})
}
