// Package sources keeps a definitions.Registry up to date from its live sources: Karta objects
// in the cluster (watched) and definition files (a ConfigMap mounted by Helm, polled).
package sources

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gangmap/gangmap/definitions"
)

// Files polls definition files and directories and sets the registry's file source whenever
// their content changes. A file that does not decode is logged and left out; the others load.
type Files struct {
	Registry *definitions.Registry
	Paths    []string
	Interval time.Duration
	// Strict makes unknown fields errors.
	Strict bool

	last [32]byte
	// synced is set after the first Sync.
	synced atomic.Bool
}

// Synced reports whether the files have been read once (Start's first Sync): the registry's file
// source then holds what they held at the start (files that do not decode are left out and
// logged, as always).
func (f *Files) Synced() bool { return f.synced.Load() }

// Start implements manager.Runnable: it loads once, then polls until ctx ends.
func (f *Files) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("definition-files")
	interval := f.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	f.Sync(ctx, log)
	f.synced.Store(true)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			f.Sync(ctx, log)
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica loads definitions.
func (f *Files) NeedLeaderElection() bool { return false }

// Sync reads the files once and updates the registry when their content changed.
func (f *Files) Sync(ctx context.Context, log logr.Logger) {
	var all bytes.Buffer
	type file struct {
		path string
		data []byte
	}
	var files []file
	seen := map[string]bool{}
	for _, p := range f.Paths {
		names, err := definitions.DefinitionFiles(p)
		if err != nil {
			log.Error(err, "Reading definitions", "path", p)
			continue
		}
		for _, n := range names {
			key, _ := filepath.Abs(n)
			if seen[key] {
				continue // named twice (a directory and a file in it): loaded once
			}
			seen[key] = true
			b, err := os.ReadFile(n)
			if err != nil {
				log.Error(err, "Reading a definition file", "file", n)
				continue
			}
			files = append(files, file{n, b})
			all.WriteString(n)
			all.Write(b)
		}
	}
	sum := sha256.Sum256(all.Bytes())
	if sum == f.last {
		return
	}
	f.last = sum
	var loaded []*definitions.Loaded
	for _, fl := range files {
		ls, err := definitions.Decode(bytes.NewReader(fl.data), fl.path, definitions.SourceFile, definitions.DecodeOptions{Strict: f.Strict})
		if err != nil {
			log.Error(err, "A definition file does not decode; it is left out", "file", fl.path)
			continue
		}
		loaded = append(loaded, ls...)
	}
	log.Info("Definition files loaded", "definitions", len(loaded))
	f.Registry.SetSource(definitions.SourceFile, loaded)
	logProblems(log, f.Registry, definitions.SourceFile)
}

// logProblems logs each current problem of one source's definitions (invalid, in conflict,
// fields lost in storage, unknown fields), with the definition, its origin and the reason.
func logProblems(log logr.Logger, r *definitions.Registry, src definitions.Source) {
	for _, p := range r.Problems() {
		if p.Source == src {
			log.Info("Definition problem", "definition", p.Definition, "origin", p.Origin, "kind", p.Kind, "reason", p.Reason, "message", p.Message)
		}
	}
}
