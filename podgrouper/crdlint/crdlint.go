// Package crdlint checks every active definition the grouper loads against the live
// CustomResourceDefinition of its workload kind (the check of `gangmap validate --crd`,
// definitions/schemalint) and reports each path the CRD's schema can never hold, before any
// workload of the kind exists: a Warning Event on the cluster Karta naming the definition field,
// the path and the nearest field the schema has, and a log line for file and catalog definitions.
// It reads CRDs only (get), never writes them.
package crdlint

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/schemalint"
)

// ReasonPathCannotResolve is the reason of the Warning Event on a Karta with a path its
// workload CRD's schema cannot hold.
const ReasonPathCannotResolve = "DefinitionPathCannotResolve"

// Linter is a manager Runnable: it lints on every definition change (Changed) and every
// Interval (a CRD installed or upgraded after the definition).
type Linter struct {
	Registry *definitions.Registry
	// Reader gets CRDs (read-only: get on customresourcedefinitions).
	Reader client.Reader
	// Mapper finds a kind's resource (plural) to name its CRD.
	Mapper   meta.RESTMapper
	Recorder record.EventRecorder
	// Interval is how often definitions are linted again without a change (default 1m).
	Interval time.Duration

	changed  chan struct{}
	once     sync.Once
	reported map[string]bool
}

var _ manager.Runnable = (*Linter)(nil)

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica may lint, but
// only the leader reports (one Event per finding).
func (l *Linter) NeedLeaderElection() bool { return true }

func (l *Linter) init() {
	l.once.Do(func() {
		l.changed = make(chan struct{}, 1)
		l.reported = map[string]bool{}
	})
}

// Changed asks for a lint soon (the registry's OnChange).
func (l *Linter) Changed() {
	l.init()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// Start implements manager.Runnable.
func (l *Linter) Start(ctx context.Context) error {
	l.init()
	iv := l.Interval
	if iv <= 0 {
		iv = time.Minute
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	l.LintAll(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.changed:
		case <-t.C:
		}
		l.LintAll(ctx)
	}
}

// LintAll lints every active definition once and reports what was not reported before for the
// same Karta and CRD versions.
func (l *Linter) LintAll(ctx context.Context) {
	l.init()
	log := ctrl.LoggerFrom(ctx).WithName("crdlint")
	for _, e := range l.Registry.Entries() {
		if !e.Active {
			continue
		}
		c := l.Registry.Lookup(e.Kind.GVK())
		if c == nil || c.Loaded == nil {
			continue
		}
		crd, err := l.crd(ctx, e.Kind.GVK())
		if err != nil {
			if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				log.V(1).Info("Cannot read the workload CRD to lint the definition", "definition", e.Name, "kind", e.Kind.String(), "error", err.Error())
			}
			continue // no CRD (yet), or a built-in kind: nothing to lint against
		}
		fs, err := schemalint.Lint(c.Loaded.Karta, crd)
		if err != nil {
			log.V(1).Info("Cannot lint the definition against its CRD", "definition", e.Name, "crd", crd.Name, "error", err.Error())
			continue
		}
		for _, f := range fs {
			if f.Unchecked {
				continue
			}
			l.report(ctx, c.Loaded, crd, f)
		}
	}
}

// crd reads the CRD of gvk (named <plural>.<group>).
func (l *Linter) crd(ctx context.Context, gvk schema.GroupVersionKind) (*apiextensionsv1.CustomResourceDefinition, error) {
	m, err := l.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := l.Reader.Get(ctx, types.NamespacedName{Name: m.Resource.Resource + "." + gvk.Group}, u); err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("CRD %s: %w", u.GetName(), err)
	}
	return crd, nil
}

// report emits one Warning Event (cluster Karta) or log line (file, catalog) per finding and
// Karta and CRD version.
func (l *Linter) report(ctx context.Context, ld *definitions.Loaded, crd *apiextensionsv1.CustomResourceDefinition, f schemalint.Finding) {
	md := ld.Karta.Metadata
	key := fmt.Sprintf("%s|%s|%s|%s|%s|%s", ld.Origin, md.UID, md.ResourceVersion, crd.ResourceVersion, f.Field, f.Path)
	if l.reported[key] {
		return
	}
	l.reported[key] = true
	msg := fmt.Sprintf("%s: %s: %s (CRD %s)", f.Field, f.Path, f.Message, crd.Name)
	ctrl.LoggerFrom(ctx).WithName("crdlint").Info("A definition path can never resolve on its workload CRD", "definition", md.Name, "origin", ld.Origin, "problem", msg)
	if l.Recorder == nil || ld.Source != definitions.SourceCluster {
		return
	}
	k := &unstructured.Unstructured{}
	k.SetAPIVersion(definitions.APIVersion)
	k.SetKind(definitions.Kind)
	k.SetName(md.Name)
	k.SetUID(types.UID(md.UID))
	l.Recorder.Event(k, corev1.EventTypeWarning, ReasonPathCannotResolve, msg)
}
