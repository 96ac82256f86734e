package owners_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// forbidKind makes a client whose Get of kind is Forbidden; objs are readable.
func forbidKind(kind string, objs ...client.Object) client.Client {
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if obj.GetObjectKind().GroupVersionKind().Kind == kind {
				return apierrors.NewForbidden(schema.GroupResource{Group: "e2e.example.com", Resource: "customjobs"}, key.Name, errors.New("no RBAC"))
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
}

func TestWalkForbiddenFirstOwner(t *testing.T) {
	ref := metav1.OwnerReference{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "train", UID: "u1"}
	w := &owners.Walker{Reader: forbidKind("CustomJob")}
	_, err := w.Walk(context.Background(), "ns", []metav1.OwnerReference{ref})
	var fe *owners.ForbiddenError
	if !errors.As(err, &fe) {
		t.Fatalf("want *ForbiddenError, got %v", err)
	}
	if fe.Ref != ref || !apierrors.IsForbidden(err) {
		t.Errorf("got ref %+v, IsForbidden %v", fe.Ref, apierrors.IsForbidden(err))
	}
}

func TestWalkForbiddenHigherOwnerTruncates(t *testing.T) {
	top := metav1.OwnerReference{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "train", UID: "u1"}
	// The direct owner (any readable kind; a ConfigMap here) is owned by the unreadable CustomJob.
	mid := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mid", Namespace: "ns", UID: types.UID("u2"), OwnerReferences: []metav1.OwnerReference{top}}}
	w := &owners.Walker{Reader: forbidKind("CustomJob", mid)}
	chain, err := w.Walk(context.Background(), "ns", []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "mid", UID: "u2"}})
	if err != nil {
		t.Fatal(err)
	}
	if chain.Forbidden == nil || *chain.Forbidden != top {
		t.Errorf("want a chain truncated at %+v, got forbidden=%+v", top, chain.Forbidden)
	}
	if got := chain.Top().Name; got != "mid" {
		t.Errorf("top = %s, want the last readable owner mid", got)
	}
}
