package owners_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/internal/heapmeasure"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// protoOwners answers a metadata Get as the API server does for the walker's metadata client: a
// PartialObjectMetadata decoded from protobuf (every string its own allocation), made of template
// with the key's name and a UID derived from it.
type protoOwners struct {
	template metav1.PartialObjectMetadata
}

func (r protoOwners) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	o := r.template.DeepCopy()
	o.Name, o.Namespace, o.UID = key.Name, key.Namespace, types.UID("uid-"+key.Name)
	data, err := o.Marshal()
	if err != nil {
		return err
	}
	return obj.(*metav1.PartialObjectMetadata).Unmarshal(data)
}

func (r protoOwners) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("not listed")
}

// ownerShapes are owners as the API server returns their metadata: the scale benchmark's
// CustomJob (created by a client: one managed-fields entry, the queue label) and a Job of a
// JobSet (the JobSet controller's labels and annotations, its owner reference, its managed
// fields).
var ownerShapes = map[string]metav1.PartialObjectMetadata{
	"scale CustomJob": {
		TypeMeta: metav1.TypeMeta{APIVersion: "e2e.example.com/v1", Kind: "CustomJob"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "123456", Generation: 1, CreationTimestamp: metav1.Now(),
			Labels: map[string]string{"kai.scheduler/queue": "team-a"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "scale.test", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "e2e.example.com/v1",
				Time: ptr.To(metav1.Now()), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:kai.scheduler/queue":{}}},"f:spec":{".":{},"f:coordinator":{".":{},"f:replicas":{},"f:template":{}},"f:worker":{".":{},"f:replicas":{},"f:template":{}}}}`)}}}},
	},
	"JobSet's Job": {
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "123456", Generation: 1, CreationTimestamp: metav1.Now(),
			Labels: map[string]string{"jobset.sigs.k8s.io/jobset-name": "train", "jobset.sigs.k8s.io/replicatedjob-name": "workers",
				"jobset.sigs.k8s.io/replicatedjob-replicas": "4", "jobset.sigs.k8s.io/job-index": "0", "jobset.sigs.k8s.io/job-key": "0123456789abcdef0123456789abcdef01234567",
				"kai.scheduler/queue": "team-a"},
			Annotations: map[string]string{"jobset.sigs.k8s.io/jobset-name": "train", "jobset.sigs.k8s.io/replicatedjob-name": "workers",
				"jobset.sigs.k8s.io/replicatedjob-replicas": "4", "jobset.sigs.k8s.io/job-index": "0", "jobset.sigs.k8s.io/job-key": "0123456789abcdef0123456789abcdef01234567"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "uid-train",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "jobset", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch/v1",
				Time: ptr.To(metav1.Now()), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{},"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:backoffLimit":{},"f:completions":{},"f:parallelism":{},"f:template":{}}}`)}}}},
	},
}

// BenchmarkCachedOwnerBytes reports the live heap per owner the walker remembers (CacheTTL, with
// its UID location), for 8,192 owners of each shape read through a metadata Get decoded from
// protobuf, each the top owner of its pods (one read per owner): what the owner cache costs per
// owner read from the API server.
func BenchmarkCachedOwnerBytes(b *testing.B) {
	const n = 8192
	for name, shape := range ownerShapes {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				shape := shape
				shape.OwnerReferences = nil // each owner is a top owner: one read per owner
				w := &owners.Walker{Reader: protoOwners{template: shape}, CacheTTL: time.Hour}
				refs := make([][]metav1.OwnerReference, n)
				for i := range refs {
					name := fmt.Sprintf("w%05d", i)
					refs[i] = []metav1.OwnerReference{{APIVersion: shape.APIVersion, Kind: shape.Kind, Name: name, UID: types.UID("uid-" + name)}}
				}
				before := heapmeasure.Live()
				for _, r := range refs {
					if _, err := w.Walk(context.Background(), "team-a", r); err != nil {
						b.Fatal(err)
					}
				}
				after := heapmeasure.Live()
				runtime.KeepAlive(w)
				runtime.KeepAlive(refs)
				b.ReportMetric(float64(after-before)/n, "B/owner")
			}
		})
	}
}
