package gang_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// FuzzPlan builds plans of arbitrary objects of every kind the catalog defines: it must never
// panic, and a plan that succeeds keeps KAI's invariants (minMember xor minSubGroup, minMember
// >= 1, every sub-group named and with a minimum).
func FuzzPlan(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		objs, err := manifest.ReadFile(file)
		if err != nil || len(objs) == 0 {
			continue
		}
		if b, err := json.Marshal(objs[0].Object); err == nil {
			f.Add(b)
		}
	}
	if b, err := os.ReadFile("testdata/jobset-leader-workers.yaml"); err == nil {
		f.Add(b)
	}
	r := registry(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return
		}
		c := r.Lookup(obj.GroupVersionKind())
		if c == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p, err := gang.Build(ctx, c, obj)
		if err != nil {
			return
		}
		for _, pg := range p.PodGroups {
			if (pg.MinMember == nil) == (pg.MinSubGroup == nil) {
				t.Fatalf("PodGroup %s: exactly one of minMember and minSubGroup must be set", pg.Name)
			}
			if pg.MinMember != nil && *pg.MinMember < 1 {
				t.Fatalf("PodGroup %s: minMember %d", pg.Name, *pg.MinMember)
			}
			if len(pg.Name) > gang.MaxNameLength {
				t.Fatalf("PodGroup name %q is longer than %d", pg.Name, gang.MaxNameLength)
			}
			for _, sg := range pg.SubGroups {
				leaf := sg.MinMember != nil && sg.MinSubGroup == nil && *sg.MinMember >= 0
				parent := sg.MinMember == nil && sg.MinSubGroup != nil && *sg.MinSubGroup >= 0
				if sg.Name == "" || leaf == parent {
					t.Fatalf("PodGroup %s: bad sub-group %+v", pg.Name, sg)
				}
			}
		}
	})
}
