package podcache

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
)

// listPageSize is how many pods one list request reads (client-go's pager's default).
const listPageSize = 500

// pagedList is the pods' ListerWatcher as the informer's reflector sees it: a list reads the pods
// in pages of pageSize and makes each page's pods Records (toRecord, the cache's transform)
// before it reads the next, so that listing 100,000 pods holds their Records and one page of
// whole pods, not 100,000 whole pods. A reflector lists once at start and again after a watch
// it cannot resume (its resourceVersion compacted away). Its own list asks for resourceVersion
// "0" (any version, from the API server's watch cache, which then ignores the page limit and
// answers with every pod at once); pagedList asks instead for the most recent version
// (resourceVersion "", a consistent read, as fresh as any version the reflector could ask for),
// which the API server serves in pages. Watches are lw's.
//
// A list is every page (opts' selectors kept), as one list of Records with the list's
// resourceVersion. An error of any page is the list's (the reflector retries; an expired
// continuation starts a new list).
func pagedList(lw toolscache.ListerWatcherWithContext, toRecord toolscache.TransformFunc, pageSize int64) *toolscache.ListWatch {
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		opts.ResourceVersion, opts.ResourceVersionMatch, opts.Continue, opts.Limit = "", "", "", pageSize
		out := &metav1.List{}
		for {
			page, err := lw.ListWithContext(ctx, opts)
			if err != nil {
				return nil, err
			}
			lm, err := meta.ListAccessor(page)
			if err != nil {
				return nil, fmt.Errorf("pod cache: list page: %w", err)
			}
			if err := meta.EachListItem(page, func(obj runtime.Object) error {
				rec, err := toRecord(obj)
				if err == nil { // a Record, or obj itself when it is no pod
					out.Items = append(out.Items, runtime.RawExtension{Object: rec.(runtime.Object)})
				}
				return err
			}); err != nil {
				return nil, fmt.Errorf("pod cache: list page: %w", err)
			}
			out.ResourceVersion = lm.GetResourceVersion()
			if opts.Continue = lm.GetContinue(); opts.Continue == "" {
				return out, nil
			}
		}
	}
	return &toolscache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: lw.WatchWithContext}
}
