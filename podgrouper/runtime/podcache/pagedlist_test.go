package podcache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
)

// pagingServer serves n pods in pages as the API server does (limit, continue), the list at
// resourceVersion 77, and records the options of every list and watch.
type pagingServer struct {
	n       int
	failAt  string
	mu      sync.Mutex
	lists   []metav1.ListOptions
	watches []metav1.ListOptions
	watcher *watch.FakeWatcher
}

func (s *pagingServer) listWatch() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.lists = append(s.lists, o)
			if o.Continue != "" && o.Continue == s.failAt {
				return nil, errors.New("connection reset")
			}
			from, _ := strconv.Atoi(o.Continue)
			to := s.n
			if o.Limit > 0 && from+int(o.Limit) < s.n {
				to = from + int(o.Limit)
			}
			list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "77"}}
			for i := from; i < to; i++ {
				list.Items = append(list.Items, *testPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p%d", i), ""))
			}
			if to < s.n {
				list.Continue = strconv.Itoa(to)
			}
			return list, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.watches = append(s.watches, o)
			return s.watcher, nil
		},
	}
}

// TestListIsReadInPagesOfRecords: the cache lists the most recent pods in pages of 500 (not the
// reflector's resourceVersion "0", which the API server answers whole), holds every listed pod,
// and watches from the list's resourceVersion.
func TestListIsReadInPagesOfRecords(t *testing.T) {
	srv := &pagingServer{n: 1234, watcher: watch.NewFake()}
	c, err := NewWithListWatch(srv.listWatch(), "kai-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.Start(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if !toolscache.WaitForCacheSync(wctx.Done(), c.HasSynced) {
		t.Fatal("not synced")
	}
	if n := len(c.Keys()); n != 1234 {
		t.Errorf("%d pods cached, want 1234", n)
	}
	if _, ok := c.Get(typesName("ns-1", "p1000")); !ok {
		t.Error("ns-1/p1000 (third page) not cached")
	}
	if err := waitFor(func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return len(srv.watches) > 0 }); err != nil {
		t.Fatal("no watch")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	var pages []string
	for _, o := range srv.lists {
		pages = append(pages, fmt.Sprintf("rv=%q limit=%d continue=%q", o.ResourceVersion, o.Limit, o.Continue))
	}
	want := []string{`rv="" limit=500 continue=""`, `rv="" limit=500 continue="500"`, `rv="" limit=500 continue="1000"`}
	if diff := cmp.Diff(want, pages); diff != "" {
		t.Errorf("list requests (-want +got):\n%s", diff)
	}
	if rv := srv.watches[0].ResourceVersion; rv != "77" {
		t.Errorf("watch from resourceVersion %q, want the list's 77", rv)
	}
}

// TestPagedListGivesRecordsOrTheError: a list is one list of Records with the list's
// resourceVersion; a page that fails fails the list (the reflector lists again).
func TestPagedListGivesRecordsOrTheError(t *testing.T) {
	srv := &pagingServer{n: 7}
	c, err := NewWithListWatch(nil, "kai-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	p := pagedList(toolscache.ToListerWatcherWithContext(srv.listWatch()), c.transform, 3)
	obj, err := p.List(metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	list := obj.(*metav1.List)
	if list.ResourceVersion != "77" || len(list.Items) != 7 {
		t.Fatalf("list at %q with %d items, want 77 and 7", list.ResourceVersion, len(list.Items))
	}
	for i, it := range list.Items {
		if r, ok := it.Object.(*podview.Record); !ok || r.Name != fmt.Sprintf("p%d", i) {
			t.Errorf("item %d is %#v, want the Record of p%d", i, it.Object, i)
		}
	}
	srv.failAt = "6"
	if _, err := p.List(metav1.ListOptions{}); err == nil || err.Error() != "connection reset" {
		t.Errorf("list with a failing third page: %v, want its error", err)
	}
}

func typesName(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
