// Command gangmap-grouper is gangmap's controller: it gives KAI Scheduler gang scheduling for
// workload kinds KAI has no native plugin for, from Workload Map definitions.
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
)

func main() {
	os.Exit(app.Main(ctrl.SetupSignalHandler(), os.Args[1:], os.Stdout, os.Stderr))
}
