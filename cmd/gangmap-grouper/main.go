// Command gangmap-grouper is gangmap's controller: it gives KAI Scheduler gang scheduling for
// workload kinds KAI has no native plugin for, from Workload Map definitions.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
)

func main() {
	o := app.DefaultOptions()
	fs := pflag.NewFlagSet("gangmap-grouper", pflag.ContinueOnError)
	o.AddFlags(fs)
	fs.SetOutput(os.Stdout)
	fs.Usage = func() {
		fmt.Fprintf(os.Stdout, "Usage: gangmap-grouper [flags]\n\ngangmap-grouper groups the pods of workload kinds KAI Scheduler has no native plugin for into\nKAI PodGroups, from Workload Map definitions. KAI keeps admission and placement authority.\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if err := app.Run(ctrl.SetupSignalHandler(), o); err != nil {
		fmt.Fprintln(os.Stderr, "gangmap-grouper:", err)
		os.Exit(1)
	}
}
