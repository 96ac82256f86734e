// Package kind holds gangmap's end-to-end test on a kind cluster with the real KAI Scheduler
// (build tag kind): gangs of a kind no KAI version knows are admitted all-or-nothing. It talks to
// the cluster named by $KUBECONFIG; `make e2e-kind` (hack/e2e-kind.sh) creates the cluster,
// installs KAI Scheduler and gangmap's chart, and runs it. It needs Docker with privileged
// containers; without them `make e2e-kind` fails at once, saying so.
package kind
