// Command gangmap-kai-podgrouper is KAI Scheduler's pod-grouper with gangmap inside: KAI's own
// application (github.com/kai-scheduler/KAI-scheduler/cmd/podgrouper/app, v0.17.0: its flags,
// manager, pod controller, PodGroup writes and RBAC) with gangmap's plugin hub registered
// (App.RegisterPlugins) and KAI's own Karta fallback off (--generic-karta-fallback=false, the only
// value accepted). Pods of a kind with a native KAI plugin are grouped by it, pods of a kind with
// an active gangmap definition (cluster Karta, file, built-in catalog) by gangmap, the rest by
// KAI's default grouper. It replaces KAI's pod-grouper image; no gangmap controller or webhook
// runs beside it (docs/kai-podgrouper.md).
//
// Flags: every flag of KAI's pod-grouper, plus gangmap's (inkai.Options): definitions, catalog,
// findings grace periods, workload metrics and shadow mode (--gangmap-shadow, which alone allows
// --generic-karta-fallback=true).
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/kai-scheduler/KAI-scheduler/cmd/podgrouper/app"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gangmap/gangmap/kaipodgrouper/kaihub"
	"github.com/gangmap/gangmap/podgrouper/runtime/inkai"
)

func main() {
	if err := run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "gangmap-kai-podgrouper: %v\n", err)
		os.Exit(1)
	}
}

// kartaFallbackFlag is KAI's switch of its own Karta-backed fallback (cmd/podgrouper/app
// options.go); gangmap is this pod-grouper's fallback, so it must be off.
const kartaFallbackFlag = "generic-karta-fallback"

func run(args []string) error {
	o := inkai.DefaultOptions()
	o.AddFlags(flag.CommandLine)
	flag.Usage = usage
	// KAI's app parses os.Args itself (app.New: flag.Parse). Its Karta fallback defaults to true
	// there; here the default is false (a later flag on the command line wins, and is refused
	// below unless false).
	os.Args = append([]string{args[0], "--" + kartaFallbackFlag + "=false"}, args[1:]...)
	a, err := app.New()
	if err != nil {
		return err
	}
	if v := flagValue(kartaFallbackFlag); v != "false" && !o.Shadow {
		return fmt.Errorf("--%s=%s: KAI's Karta fallback would group the kinds gangmap's definitions describe by other rules; gangmap is this pod-grouper's fallback (leave the flag out, or compare them with --gangmap-shadow)", kartaFallbackFlag, v)
	}
	kai := inkai.KAIConfig{SchedulerName: flagValue("scheduler-name"), QueueLabelKey: flagValue("queue-label-key"),
		NodePoolLabelKey: flagValue("nodepool-label-key"), PodGroups: kaihub.PodGroupClient{KAI: a.Mgr.GetClient()}}
	hub, g, err := inkai.Setup(a.Mgr, o, kai, a.DefaultPluginsHub)
	if err != nil {
		return err
	}
	g.PodGroups = kaihub.PodGroupReader(a.Mgr.GetClient())
	if err := a.Mgr.AddReadyzCheck("gangmap-definitions", func(*http.Request) error {
		if !hub.Ready() {
			return errors.New("gangmap's definition sources have not loaded yet")
		}
		return nil
	}); err != nil {
		return err
	}
	a.RegisterPlugins(kaihub.New(a.DefaultPluginsHub, hub, g))
	ctrl.Log.WithName("setup").Info("Starting KAI's pod-grouper with gangmap's plugin hub",
		"schedulerName", kai.SchedulerName, "queueLabelKey", kai.QueueLabelKey, "nodePoolLabelKey", kai.NodePoolLabelKey,
		"definitions", o.DefinitionPaths, "clusterDefinitions", o.ClusterDefinitions, "catalog", o.Catalog,
		"strictDefinitions", o.StrictDefinitions, "kartaFallback", flagValue(kartaFallbackFlag) == "true",
		"shadow", o.Shadow, "maxWorkloadMetrics", o.MaxWorkloadMetrics)
	return a.Run()
}

// flagValue is the value of a flag of the command line's flag set (KAI's, after app.New parsed
// it), "" when there is no such flag.
func flagValue(name string) string {
	if f := flag.CommandLine.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// usage is --help: KAI's pod-grouper flags and gangmap's (their help starts with "gangmap:"), and
// what this binary changes about KAI's defaults.
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, `Usage of gangmap-kai-podgrouper: KAI Scheduler's pod-grouper (v0.17) with gangmap's plugin hub.
Native KAI plugins first, gangmap's definitions (cluster Kartas, --definitions, the built-in catalog)
for kinds KAI has no plugin for, KAI's default grouper otherwise.

--%s is false here (KAI's default: true) and may be set true only with --gangmap-shadow
(shadow mode: KAI writes what stock KAI with these flags would; gangmap decides, reports through
Events, findings and metrics, and writes nothing).

gangmap's findings (Warning Events on the workload and its Karta; gangmap_gang_findings) and
workload metrics (gangmap_workload_*) are served on KAI's --metrics-bind-address.

`, kartaFallbackFlag)
	flag.PrintDefaults()
}
