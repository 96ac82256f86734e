package definitions

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions/expr"
)

// Registry holds the definitions of every source and answers, per workload kind, which one wins:
// cluster over file over catalog. Two definitions for one kind from the same source are a
// conflict: neither is used (nor any lower-precedence one for that kind) and the conflict is
// reported naming both. An invalid definition is reported and skipped. A Registry is safe for
// concurrent use; lookups take a read lock only.
type Registry struct {
	compiler *expr.Compiler

	mu      sync.RWMutex
	sources map[Source][]*Loaded
	cache   map[string]*compileResult // by origin and content hash: recompile only what changed
	winners map[schema.GroupVersionKind]*Compiled
	// unusable holds, per kind with no winner, why the definitions written for it are not used.
	unusable map[schema.GroupVersionKind]string
	problems []Problem
	// refused are definitions refused from outside (Refuse), by RefusalKey, with the message.
	refused map[string]string
	// generation counts changes of the winners; plans cached under an older one are stale.
	generation int64
	listeners  []func()
	// vetter checks new cluster and file definitions before they can win (SetVetter).
	vetter Vetter
}

// Vetter checks definitions before SetSource lets them win and returns the ones to refuse, by
// RefusalKey, each with its message (as Refuse takes them). The grouper's is the CRD schema lint
// (podgrouper/runtime/crdlint): without it a definition with a path its CRD cannot hold would be
// used from its load until the lint ran, long enough to rewrite live gangs' PodGroups with it.
type Vetter func(defs []*Loaded) map[string]string

// SetVetter sets the Vetter SetSource runs on every cluster and file definition whose content it
// has not compiled before (a catalog definition is never vetted: it is only reported).
func (r *Registry) SetVetter(v Vetter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vetter = v
}

type compileResult struct {
	compiled *Compiled
	err      error
}

// Problem is something wrong with the definitions: an invalid definition, a conflict, a field
// lost in storage.
type Problem struct {
	// Definition names the definition(s); Kind the workload kind when known.
	Definition string `json:"definition"`
	Origin     string `json:"origin"`
	Source     Source `json:"source"`
	Kind       string `json:"kind,omitempty"`
	// Reason is a short CamelCase word for Events and metrics: Invalid, Conflict, LostFields,
	// UnknownField.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// NewRegistry returns an empty registry that compiles with compiler.
func NewRegistry(compiler *expr.Compiler) *Registry {
	return &Registry{compiler: compiler, sources: map[Source][]*Loaded{}, cache: map[string]*compileResult{}, winners: map[schema.GroupVersionKind]*Compiled{}}
}

// Compiler is the expression compiler the registry uses.
func (r *Registry) Compiler() *expr.Compiler { return r.compiler }

// OnChange registers f to run (without the registry's lock) after the winners may have changed.
func (r *Registry) OnChange(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listeners = append(r.listeners, f)
}

// SetSource replaces every definition of one source and recomputes the winners. Definitions
// unchanged since the last call are not recompiled.
func (r *Registry) SetSource(src Source, defs []*Loaded) {
	refuse := r.vet(src, defs)
	r.mu.Lock()
	for k, msg := range refuse {
		if r.refused == nil {
			r.refused = map[string]string{}
		}
		r.refused[k] = msg
	}
	r.sources[src] = defs
	r.recompute()
	listeners := append([]func(){}, r.listeners...)
	r.mu.Unlock()
	for _, f := range listeners {
		f()
	}
}

// vet runs the Vetter (without the registry's lock: it may read the API server) on the
// definitions of a cluster or file source whose content was not compiled before.
func (r *Registry) vet(src Source, defs []*Loaded) map[string]string {
	if src == SourceCatalog {
		return nil
	}
	r.mu.RLock()
	v := r.vetter
	var fresh []*Loaded
	for _, l := range defs {
		if _, ok := r.cache[cacheKey(l)]; !ok {
			fresh = append(fresh, l)
		}
	}
	r.mu.RUnlock()
	if v == nil || len(fresh) == 0 {
		return nil
	}
	return v(fresh)
}

// Lookup returns the winning definition for a workload kind, or nil (a literal nil, never a
// typed nil inside an interface) when no valid, unambiguous definition exists.
func (r *Registry) Lookup(gvk schema.GroupVersionKind) *Compiled {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.winners[gvk]
}

// Unusable returns, for a kind that definitions name but none of them is used for (each invalid,
// refused, or in conflict, and no lower-precedence definition takes over), why: the first such
// problem's message, naming the definition. It returns "" for a kind with an active definition
// (Lookup) and for a kind no definition names. Callers treat such a kind as gangmap's all the
// same (hub.Hub.Decide): its pods are held from KAI's pod-grouper and reported, not left to be
// grouped one by one, since a wrong definition must fail loudly and never split a gang.
func (r *Registry) Unusable(gvk schema.GroupVersionKind) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.unusable[gvk]
}

// Generation increases whenever the winners are recomputed.
func (r *Registry) Generation() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.generation
}

// Problems returns the current problems, sorted by definition name.
func (r *Registry) Problems() []Problem {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Problem(nil), r.problems...)
}

// Source returns the definitions last set for src (SetSource), in their order.
func (r *Registry) Source(src Source) []*Loaded {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]*Loaded(nil), r.sources[src]...)
}

// Entry describes one loaded definition for listings.
type Entry struct {
	Name   string           `json:"name"`
	Kind   GroupVersionKind `json:"kind"`
	Source Source           `json:"source"`
	Origin string           `json:"origin"`
	// Active says this definition is the one used for its kind.
	Active bool `json:"active"`
	// Problems lists what is wrong with it.
	Problems []string `json:"problems,omitempty"`
}

// Entries lists every loaded definition with whether it is active and its problems, sorted by
// kind then source precedence.
func (r *Registry) Entries() []Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Entry
	for src, defs := range r.sources {
		for _, l := range defs {
			e := Entry{Name: l.Name(), Source: src, Origin: l.Origin}
			if k := l.Karta.Spec.StructureDefinition.RootComponent.Kind; k != nil {
				e.Kind = *k
				// Compare by source and origin: an unchanged definition reloaded by its source is
				// served from the compile cache, with the Loaded of its first load.
				if w := r.winners[k.GVK()]; w != nil && w.Loaded.Source == src && w.Loaded.Origin == l.Origin {
					e.Active = true
				}
			}
			// A conflict is recorded once per definition in it (recompute), with that definition's
			// origin: matching by origin lists it once per entry.
			for _, p := range r.problems {
				if p.Origin == l.Origin {
					e.Problems = append(e.Problems, p.Message)
				}
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { // by kind, precedence, then origin: a total order
		return cmp.Or(strings.Compare(a.Kind.String(), b.Kind.String()), cmp.Compare(a.Source.Rank(), b.Source.Rank()),
			strings.Compare(a.Origin, b.Origin), strings.Compare(a.Name, b.Name))
	})
	return out
}

// recompute compiles (from cache) every definition and picks the winner per kind. Callers hold
// the write lock.
func (r *Registry) recompute() {
	r.problems = nil
	type candidate struct {
		l *Loaded
		c *Compiled
	}
	byKind := map[schema.GroupVersionKind]map[Source][]candidate{}
	unusable := map[schema.GroupVersionKind]string{}
	note := func(gvk schema.GroupVersionKind, p Problem) {
		if _, ok := unusable[gvk]; ok || gvk.Kind == "" {
			return
		}
		if p.Reason == "Invalid" { // the message names the definition already
			unusable[gvk] = p.Message
			return
		}
		unusable[gvk] = fmt.Sprintf("definition %q (%s) is not used (%s): %s", p.Definition, p.Origin, p.Reason, p.Message)
	}
	used := map[string]bool{}
	for _, src := range []Source{SourceCluster, SourceFile, SourceCatalog} {
		for _, l := range r.sources[src] {
			for _, w := range l.Warnings {
				r.problems = append(r.problems, Problem{Definition: l.Name(), Origin: l.Origin, Source: src, Reason: warningReason(w.Detail), Message: w.Error()})
			}
			key := cacheKey(l)
			used[key] = true
			res, ok := r.cache[key]
			if !ok {
				c, err := Compile(l, r.compiler)
				res = &compileResult{compiled: c, err: err}
				r.cache[key] = res
			}
			if res.err != nil {
				p := Problem{Definition: l.Name(), Origin: l.Origin, Source: src, Reason: "Invalid", Message: res.err.Error()}
				r.problems = append(r.problems, p)
				note(rootKindOf(l), p)
				continue
			}
			if msg, ok := r.refused[key]; ok {
				p := Problem{Definition: l.Name(), Origin: l.Origin, Source: src, Kind: KindString(res.compiled.RootGVK().GVK()), Reason: ReasonPathCannotResolve, Message: msg}
				r.problems = append(r.problems, p)
				note(res.compiled.RootGVK().GVK(), p)
				continue
			}
			gvk := res.compiled.RootGVK().GVK()
			if byKind[gvk] == nil {
				byKind[gvk] = map[Source][]candidate{}
			}
			byKind[gvk][src] = append(byKind[gvk][src], candidate{l, res.compiled})
		}
	}
	for k := range r.cache {
		if !used[k] {
			delete(r.cache, k)
		}
	}
	winners := map[schema.GroupVersionKind]*Compiled{}
	for gvk, bySrc := range byKind {
		for _, src := range []Source{SourceCluster, SourceFile, SourceCatalog} {
			cands := bySrc[src]
			if len(cands) == 0 {
				continue
			}
			if len(cands) > 1 {
				var names []string
				for _, c := range cands {
					names = append(names, fmt.Sprintf("%q (%s)", c.l.Name(), c.l.Origin))
				}
				slices.Sort(names)
				// One problem per definition in conflict, so that each is told (an Event on each
				// Karta from the cluster source).
				for _, c := range cands {
					p := Problem{Definition: c.l.Name(), Origin: c.l.Origin, Source: src, Kind: KindString(gvk), Reason: "Conflict",
						Message: fmt.Sprintf("%d %s definitions for %s: %v; none is used until one is removed", len(cands), src, KindString(gvk), names)}
					r.problems = append(r.problems, p)
					note(gvk, p)
				}
				break
			}
			winners[gvk] = cands[0].c
			break
		}
	}
	// By definition, then origin (two files may hold definitions of one name): one order every
	// time, for the messages that list them. Stable: one definition's problems keep their order.
	slices.SortStableFunc(r.problems, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.Definition, b.Definition), strings.Compare(a.Origin, b.Origin))
	})
	for gvk := range winners {
		delete(unusable, gvk)
	}
	r.winners, r.unusable = winners, unusable
	r.generation++
}

// rootKindOf is the workload kind an uncompiled definition names (its root component's kind),
// empty when it names none.
func rootKindOf(l *Loaded) schema.GroupVersionKind {
	if l.Karta == nil || l.Karta.Spec.StructureDefinition.RootComponent.Kind == nil {
		return schema.GroupVersionKind{}
	}
	return l.Karta.Spec.StructureDefinition.RootComponent.Kind.GVK()
}

// ReasonPathCannotResolve is the Problem reason of a definition refused because a path of it can
// never resolve on its workload kind's CRD schema (podgrouper/runtime/crdlint, through Refuse).
const ReasonPathCannotResolve = "PathCannotResolve"

// RefusalKey names one version of a loaded definition for Refuse: its source, origin and content,
// so that a changed (fixed) definition is a new key and is no longer refused.
func RefusalKey(l *Loaded) string { return cacheKey(l) }

// Refuse sets the definitions to refuse, by RefusalKey, each with the message of its Problem
// (reason ReasonPathCannotResolve): a refused definition is not used for its kind, as an invalid
// one is not, and the next source's definition (or none) takes its place. It replaces the previous
// set; when the set is unchanged it does nothing (no recompute, no new generation) and returns
// false, else it recomputes the winners, runs the OnChange listeners and returns true.
func (r *Registry) Refuse(refused map[string]string) bool {
	r.mu.Lock()
	return r.setRefusedLocked(refused)
}

// RefuseLinted is Refuse for a lint of some definitions only: every key of linted takes the
// verdict refused gives it (refused or not), every other key keeps the one it had (a definition
// SetSource's Vetter refused while the lint read CRDs, or one whose CRD the lint could not read),
// and refusals of definitions no cluster or file source holds any more are dropped. It returns
// whether the set changed, as Refuse does.
func (r *Registry) RefuseLinted(refused map[string]string, linted map[string]bool) bool {
	r.mu.Lock()
	held := map[string]bool{}
	for _, src := range []Source{SourceCluster, SourceFile} {
		for _, l := range r.sources[src] {
			held[cacheKey(l)] = true
		}
	}
	merged := make(map[string]string, len(refused))
	for k, v := range r.refused {
		if !linted[k] && held[k] {
			merged[k] = v
		}
	}
	for k, v := range refused {
		merged[k] = v
	}
	return r.setRefusedLocked(merged)
}

// setRefusedLocked makes refused the refused set (r.mu held; it unlocks it) and reports whether
// it changed, recomputing the winners and running the listeners when it did.
func (r *Registry) setRefusedLocked(refused map[string]string) bool {
	if len(refused) == len(r.refused) {
		same := true
		for k, v := range refused {
			if old, ok := r.refused[k]; !ok || old != v {
				same = false
				break
			}
		}
		if same {
			r.mu.Unlock()
			return false
		}
	}
	r.refused = make(map[string]string, len(refused))
	for k, v := range refused {
		r.refused[k] = v
	}
	r.recompute()
	listeners := append([]func(){}, r.listeners...)
	r.mu.Unlock()
	for _, f := range listeners {
		f()
	}
	return true
}

func warningReason(detail string) string {
	if len(detail) >= 13 && detail[:13] == "unknown field" {
		return "UnknownField"
	}
	return "LostFields"
}

func cacheKey(l *Loaded) string {
	b, _ := json.Marshal(l.Karta)
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%s|%s|%x", l.Source, l.Origin, sum[:12])
}
