// Command gangmap plans KAI Scheduler gangs (PodGroups) from Workload Map definitions: see
// package app. Installed as kubectl-gangmap on PATH it runs as "kubectl gangmap".
package main

import (
	"os"

	"github.com/gangmap/gangmap/cmd/gangmap/app"
)

func main() {
	os.Exit(app.Run(os.Args[1:], os.Stdout, os.Stderr))
}
