// Package crdlint checks every active definition the grouper loads against the live
// CustomResourceDefinition of its workload kind (the check of `gangmap validate --crd`,
// definitions/schemalint) and reports each path the CRD's schema can never hold, before any
// workload of the kind exists: a Warning Event on the cluster Karta naming the definition field,
// the path and the nearest field the schema has, and an error log line. Such a cluster or file
// definition is refused (not used, as an invalid one is not) until it changes; a catalog one is
// only reported.
// It reads CRDs only (get), never writes them.
package crdlint

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
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
	// Elected is closed once this replica leads (manager.Elected): only the leader sends Events.
	// Nil: this replica sends them.
	Elected <-chan struct{}

	changed  chan struct{}
	once     sync.Once
	reported map[string]bool
}

var _ manager.Runnable = (*Linter)(nil)

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica lints, since every
// replica's webhook decides with the registry and a refused definition must be refused by all of
// them; only the leader sends Events (Elected).
func (l *Linter) NeedLeaderElection() bool { return false }

// leads says whether this replica sends Events (a nil Elected is never ready: it leads).
func (l *Linter) leads() bool {
	select {
	case <-l.Elected:
		return true
	default:
		return l.Elected == nil
	}
}

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
	t := time.NewTicker(cmp.Or(max(l.Interval, 0), time.Minute)) // unset or not positive: a minute
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

// LintAll lints every definition once, reports what was not reported before for the same
// Karta and CRD versions, and refuses (Registry.Refuse) every cluster and file definition with a
// path its CRD's schema can never hold: such a definition is an error, never used, as an invalid
// one is not (a misspelt path read through a `//` default would size the gang wrong without a
// word). Cluster and file definitions are linted whether active or not, so that a refused one
// stays refused until it changes; catalog definitions (active ones) are reported only, since they
// are written across operator versions. A definition whose CRD cannot be read for another reason
// than its absence keeps its previous verdict.
func (l *Linter) LintAll(ctx context.Context) {
	l.init()
	refused, linted := map[string]string{}, map[string]bool{}
	lds := slices.Concat(l.Registry.Source(definitions.SourceCluster), l.Registry.Source(definitions.SourceFile))
	for _, e := range l.Registry.Entries() {
		if c := l.Registry.Lookup(e.Kind.GVK()); e.Active && e.Source == definitions.SourceCatalog && c != nil && c.Loaded != nil {
			lds = append(lds, c.Loaded)
		}
	}
	for _, ld := range lds {
		key := definitions.RefusalKey(ld)
		r, ok := l.lint(ctx, ld, true)
		linted[key] = linted[key] || ok
		if r != "" && ld.Source != definitions.SourceCatalog {
			refused[key] = r
		}
	}
	l.Registry.RefuseLinted(refused, linted)
}

// vetTimeout bounds the CRD reads of one Vet call.
const vetTimeout = 10 * time.Second

// Vet is the registry's Vetter (Registry.SetVetter): it lints the given cluster and file
// definitions against their CRDs before they can win, and returns those to refuse, so that a
// definition with a path its CRD cannot hold is never used, not even until the next LintAll
// (which the same change triggers, and which reports it). A CRD it cannot read refuses nothing
// here: LintAll decides.
func (l *Linter) Vet(defs []*definitions.Loaded) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), vetTimeout)
	defer cancel()
	refused := map[string]string{}
	for _, ld := range defs {
		if ld.Source == definitions.SourceCatalog {
			continue
		}
		if r, _ := l.lint(ctx, ld, false); r != "" {
			refused[definitions.RefusalKey(ld)] = r
		}
	}
	return refused
}

// lint lints ld against its workload kind's CRD and returns the refusal message when a path can
// never resolve there (empty otherwise); linted says there was a verdict: the CRD was read, or
// there is none (not yet installed, or a built-in kind: nothing to lint against). With report, it
// logs and reports each finding (report) and logs at V(1) what kept it from linting.
func (l *Linter) lint(ctx context.Context, ld *definitions.Loaded, report bool) (refused string, linted bool) {
	root := ld.Karta.Spec.StructureDefinition.RootComponent.Kind
	if root == nil {
		return "", false
	}
	log := logr.Discard()
	if report {
		log = ctrl.LoggerFrom(ctx).WithName("crdlint")
	}
	crd, err := l.crd(ctx, root.GVK())
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return "", true
	} else if err != nil {
		log.V(1).Info("Cannot read the workload CRD to lint the definition", "definition", ld.Name(), "kind", root.String(), "error", err.Error())
		return "", false
	}
	fs, err := schemalint.Lint(ld.Karta, crd)
	if err != nil {
		log.V(1).Info("Cannot lint the definition against its CRD", "definition", ld.Name(), "crd", crd.Name, "error", err.Error())
		return "", true
	}
	var msgs []string
	for _, f := range fs {
		if f.Unchecked {
			continue
		}
		msgs = append(msgs, fmt.Sprintf("%s: %s: %s (CRD %s)", f.Field, f.Path, f.Message, crd.Name))
		if report {
			l.report(ctx, ld, crd, f, msgs[len(msgs)-1])
		}
	}
	if len(msgs) == 0 {
		return "", true
	}
	return refusal(crd, msgs), true
}

// refusal is the Problem message of a definition refused for msgs.
func refusal(crd *apiextensionsv1.CustomResourceDefinition, msgs []string) string {
	return fmt.Sprintf("refused: %d path(s) can never resolve on CRD %s (gangmap validate --crd says the same): %s; the definition is refused until it is fixed", len(msgs), crd.Name, strings.Join(msgs, "; "))
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

// report emits one Warning Event (cluster Karta) and one error log line per finding (its text
// msg) and Karta and CRD version.
func (l *Linter) report(ctx context.Context, ld *definitions.Loaded, crd *apiextensionsv1.CustomResourceDefinition, f schemalint.Finding, msg string) {
	md := ld.Karta.Metadata
	key := fmt.Sprintf("%s|%s|%s|%s|%s|%s", ld.Origin, md.UID, md.ResourceVersion, crd.ResourceVersion, f.Field, f.Path)
	if l.reported[key] || !l.leads() {
		return
	}
	l.reported[key] = true
	log := ctrl.LoggerFrom(ctx).WithName("crdlint")
	if ld.Source == definitions.SourceCatalog {
		log.Info("A catalog definition path can never resolve on its workload CRD (the catalog is written across operator versions: reported, still used)", "definition", md.Name, "origin", ld.Origin, "problem", msg)
	} else {
		log.Error(nil, "A definition path can never resolve on its workload CRD: the definition is refused until it is fixed", "definition", md.Name, "origin", ld.Origin, "problem", msg)
	}
	if l.Recorder != nil && ld.Source == definitions.SourceCluster {
		k := &corev1.ObjectReference{APIVersion: definitions.APIVersion, Kind: definitions.Kind, Name: md.Name, UID: types.UID(md.UID)}
		l.Recorder.Event(k, corev1.EventTypeWarning, ReasonPathCannotResolve, msg+"; the definition is refused until it is fixed")
	}
}
