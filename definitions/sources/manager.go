package sources

import (
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gangmap/gangmap/definitions"
)

// Source is a live source of definitions: a manager runnable that reports when it has loaded once.
type Source interface {
	manager.Runnable
	Synced() bool
}

// AddToManager adds the sources of registry to mgr and returns them: the files and directories of
// paths (none when empty), polled every poll, and, when cluster, the Karta objects of mgr's
// cluster (Warning Events from "gangmap-definitions"). strict leaves out definitions with unknown
// fields.
func AddToManager(mgr manager.Manager, registry *definitions.Registry, paths []string, poll time.Duration, cluster, strict bool) ([]Source, error) {
	var out []Source
	if len(paths) > 0 {
		out = append(out, &Files{Registry: registry, Paths: paths, Interval: poll, Strict: strict})
	}
	if cluster {
		dyn, err := dynamic.NewForConfig(mgr.GetConfig())
		if err != nil {
			return nil, err
		}
		disc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return nil, err
		}
		out = append(out, &Cluster{Registry: registry, Dynamic: dyn, Discovery: disc, Recorder: mgr.GetEventRecorderFor("gangmap-definitions"), Strict: strict})
	}
	for _, s := range out {
		if err := mgr.Add(s); err != nil {
			return nil, err
		}
	}
	return out, nil
}
