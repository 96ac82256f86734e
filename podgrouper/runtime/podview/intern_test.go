package podview

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// samples are the first object of every workload sample of gang/testdata, e2e/testdata and the
// catalog's testdata, as JSON (what the informer decodes), by directory and file name.
func samples(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, dir := range []string{"../../../gang/testdata", "../../../e2e/testdata", "../../../definitions/catalog/testdata"} {
		files, err := filepath.Glob(dir + "/*.yaml")
		require.NoError(t, err)
		for _, f := range files {
			objs, err := manifest.ReadFile(f)
			if err != nil || len(objs) == 0 || strings.Contains(f, "karta") {
				continue
			}
			js, err := objs[0].MarshalJSON()
			require.NoError(t, err)
			out[filepath.Base(dir)+"/"+filepath.Base(f)] = js
		}
	}
	require.Greater(t, len(out), 70)
	return out
}

// decodeAs decodes js as the informer would after the API server stored it: named w-<i> in
// namespace ns, with a UID, resourceVersion, generation and creation time (the same second for
// every i).
func decodeAs(t testing.TB, js []byte, i int) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(js))
	u.SetNamespace("ns")
	u.SetName(fmt.Sprintf("w-%d", i))
	u.SetUID(types.UID(fmt.Sprintf("uid-%d", i)))
	u.SetResourceVersion(fmt.Sprint(1000 + i))
	u.SetGeneration(1)
	md := u.Object["metadata"].(map[string]any)
	md["creationTimestamp"] = string([]byte("2026-12-02T01:40:00Z")) // each object its own bytes
	return u
}

// TestInternerKeepsContent: every sample workload, transformed by an Interner that has seen all
// the others (three copies of each, so their subtrees are shared), holds exactly what
// TransformWorkload alone keeps, and every catalog definition plans it the same (the plan, its
// status and notes).
func TestInternerKeepsContent(t *testing.T) {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(reg))
	in := NewInterner(4096)
	all := samples(t)
	for _, js := range all {
		for i := range 3 {
			_, _ = in.Transform(decodeAs(t, js, i))
		}
	}
	planned := 0
	for name, js := range all {
		want, _ := TransformWorkload(decodeAs(t, js, 9))
		got, _ := in.Transform(decodeAs(t, js, 9))
		w, g := want.(*unstructured.Unstructured), got.(*unstructured.Unstructured)
		require.True(t, reflect.DeepEqual(w.Object, g.Object), name)
		cd := reg.Lookup(w.GroupVersionKind())
		if cd == nil {
			continue
		}
		pw, errW := gang.Build(context.Background(), cd, w)
		pg, errG := gang.Build(context.Background(), cd, g)
		require.Equal(t, fmt.Sprint(errW), fmt.Sprint(errG), name)
		if errW != nil {
			continue
		}
		jw, _ := json.Marshal(pw)
		jg, _ := json.Marshal(pg)
		require.JSONEq(t, string(jw), string(jg), name)
		require.Equal(t, pw.Status, pg.Status, name)
		require.Equal(t, pw.StatusText(), pg.StatusText(), name)
		planned++
	}
	require.Greater(t, planned, 30)
}

// Equal subtrees of two workloads are one object; the root and its metadata are each
// workload's own; a deep copy (what the cached client returns) can be written without touching
// either workload.
func TestInternerShares(t *testing.T) {
	objs, err := manifest.ReadFile("../../../e2e/testdata/customjob.yaml")
	require.NoError(t, err)
	js, err := objs[0].MarshalJSON()
	require.NoError(t, err)
	in := NewInterner(64)
	a, _ := in.Transform(decodeAs(t, js, 1))
	b, _ := in.Transform(decodeAs(t, js, 2))
	ua, ub := a.(*unstructured.Unstructured), b.(*unstructured.Unstructured)
	same := func(x, y any) bool { return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() }
	assert.True(t, same(ua.Object["spec"], ub.Object["spec"]), "spec shared")
	assert.True(t, same(ua.Object["metadata"].(map[string]any)["labels"], ub.Object["metadata"].(map[string]any)["labels"]), "labels shared")
	assert.False(t, same(ua.Object, ub.Object))
	assert.False(t, same(ua.Object["metadata"], ub.Object["metadata"]))
	assert.Equal(t, "w-1", ua.GetName())
	assert.Equal(t, "w-2", ub.GetName())

	cp := ua.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(cp.Object, int64(7), "spec", "worker", "replicas"))
	n, _, _ := unstructured.NestedInt64(ub.Object, "spec", "worker", "replicas")
	assert.Equal(t, int64(2), n)

	// A different value is not shared with the old subtree; the equal parts still are.
	c := decodeAs(t, js, 3)
	require.NoError(t, unstructured.SetNestedField(c.Object, int64(5), "spec", "worker", "replicas"))
	cc, _ := in.Transform(c)
	uc := cc.(*unstructured.Unstructured)
	n, _, _ = unstructured.NestedInt64(uc.Object, "spec", "worker", "replicas")
	assert.Equal(t, int64(5), n)
	assert.False(t, same(uc.Object["spec"], ua.Object["spec"]))
	assert.True(t, same(uc.Object["spec"].(map[string]any)["coordinator"], ua.Object["spec"].(map[string]any)["coordinator"]), "coordinator shared")
	// int64 2 and float64 2 are different JSON values to a definition's expressions: never shared.
	d := decodeAs(t, js, 4)
	require.NoError(t, unstructured.SetNestedField(d.Object, float64(2), "spec", "worker", "replicas"))
	dd, _ := in.Transform(d)
	_, isFloat := dd.(*unstructured.Unstructured).Object["spec"].(map[string]any)["worker"].(map[string]any)["replicas"].(float64)
	assert.True(t, isFloat)
}

// Informers transform concurrently (run with -race).
func TestInternerConcurrent(t *testing.T) {
	all := samples(t)
	in := NewInterner(256)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := 0
			for _, js := range all {
				want, _ := TransformWorkload(decodeAs(t, js, g*1000+i))
				got, _ := in.Transform(decodeAs(t, js, g*1000+i))
				assert.True(t, reflect.DeepEqual(want.(*unstructured.Unstructured).Object, got.(*unstructured.Unstructured).Object))
				i++
			}
		}()
	}
	wg.Wait()
}

// An object transformed again (client-go's watch-list path hands objects to the transform twice)
// is left as it is, and the transform never writes to a subtree other objects share: readers of
// the cached objects run while the same and new objects are transformed (run with -race).
func TestInternerTransformsTwiceWithoutWrites(t *testing.T) {
	all := samples(t)
	in := NewInterner(4096)
	var done []*unstructured.Unstructured
	for _, js := range all {
		o, _ := in.Transform(decodeAs(t, js, 1))
		done = append(done, o.(*unstructured.Unstructured))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, o := range done {
				_ = o.DeepCopy() // reads every map, as the cached client's Get
			}
		}
	}()
	for round := range 3 {
		for i, o := range done {
			spec := o.Object["spec"]
			again, _ := in.Transform(o)
			require.Same(t, o, again)
			require.True(t, sameTree(spec, o.Object["spec"]), "the spec of a transformed object was replaced")
			_, _ = in.Transform(decodeAs(t, must(o.MarshalJSON()), 100*round+i)) // a fresh equal object
		}
	}
	close(stop)
	wg.Wait()
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestInternerStaticKeys: after the transform, the root's and metadata's well-known keys are the
// static strings, and the apiVersion, kind and namespace of workloads seen before are one boxed
// value; a second transform leaves the maps as they are.
func TestInternerStaticKeys(t *testing.T) {
	objs, err := manifest.ReadFile("../../../e2e/testdata/customjob.yaml")
	require.NoError(t, err)
	js, err := objs[0].MarshalJSON()
	require.NoError(t, err)
	in := NewInterner(64)
	var got []*unstructured.Unstructured
	for i := range 3 {
		o, _ := in.Transform(decodeAs(t, js, i))
		got = append(got, o.(*unstructured.Unstructured))
	}
	for _, u := range got {
		md := u.Object["metadata"].(map[string]any)
		for _, m := range []map[string]any{u.Object, md} {
			for k := range m {
				if s, ok := wellKnownKeys[k]; ok {
					assert.True(t, sameString(s, k), "key %q is not the static one", k)
				}
			}
		}
	}
	box := func(u *unstructured.Unstructured, k string) any { return u.Object[k] }
	data := func(v any) unsafe.Pointer { return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1] }
	assert.Equal(t, data(box(got[1], "apiVersion")), data(box(got[2], "apiVersion")), "apiVersion boxed once")
	assert.Equal(t, data(box(got[1], "kind")), data(box(got[2], "kind")), "kind boxed once")
	created := func(u *unstructured.Unstructured) any {
		return u.Object["metadata"].(map[string]any)["creationTimestamp"]
	}
	assert.Equal(t, data(created(got[1])), data(created(got[2])), "a creation time seen before boxed once")
	assert.Equal(t, "2026-12-02T01:40:00Z", got[2].GetCreationTimestamp().UTC().Format(time.RFC3339))
	assert.Equal(t, "e2e.example.com/v1", got[2].GetAPIVersion())
	assert.Equal(t, "ns", got[2].GetNamespace())

	root, md := got[2].Object, got[2].Object["metadata"]
	again, _ := in.Transform(got[2])
	assert.True(t, sameTree(root, again.(*unstructured.Unstructured).Object), "a second transform made a new root")
	assert.True(t, sameTree(md, again.(*unstructured.Unstructured).Object["metadata"]), "a second transform made a new metadata map")
}

// FuzzInternerKeepsContent: any JSON object the informer could decode, transformed by an
// Interner that has seen it before (so its subtrees are shared) and again (client-go's
// watch-list path), holds exactly what TransformWorkload alone keeps, and the shared copy is
// not changed by the second object's transform.
func FuzzInternerKeepsContent(f *testing.F) {
	for _, js := range samples(f) {
		f.Add(js)
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"K","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"1","generation":1,"creationTimestamp":"2026-12-02T01:40:00Z","labels":{"a":"b"},"annotations":{"c":"d"}},"spec":{"x":[1,2.5,"s",true,null,{"y":{}}]}}`))
	in := NewInterner(64)
	f.Fuzz(func(t *testing.T, js []byte) {
		decode := func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(js); err != nil {
				return nil
			}
			return u
		}
		first := decode()
		if first == nil {
			return
		}
		want, _ := TransformWorkload(decode())
		a, _ := in.Transform(first)
		before := a.(*unstructured.Unstructured).DeepCopy()
		b, _ := in.Transform(decode())
		again, _ := in.Transform(b)
		w := want.(*unstructured.Unstructured).Object
		for _, got := range []any{a, b, again} {
			if !reflect.DeepEqual(w, got.(*unstructured.Unstructured).Object) {
				t.Fatalf("content changed:\nwant %v\ngot  %v", w, got.(*unstructured.Unstructured).Object)
			}
		}
		if !reflect.DeepEqual(before.Object, a.(*unstructured.Unstructured).Object) {
			t.Fatal("the first object changed when the second was transformed")
		}
	})
}
