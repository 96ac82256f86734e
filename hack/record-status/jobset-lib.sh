# hack/record-status/jobset-lib.sh: the JobSet controller for the recording scripts that need it
# (jobset.sh; trainer.sh, whose TrainJobs run as JobSets). Source it after lib.sh and webhooks.sh;
# it needs JOBSET_BIN (`go build .` of a kubernetes-sigs/jobset checkout, main.go) and JOBSET_SRC
# (that checkout: its CRDs and webhook manifests).
#
#   JOBSET_CRDS                 the --crds directory for start_cluster
#   JOBSET_RELEASE              "JobSet <tag> (kubernetes-sigs/jobset commit <sha>)", for headers
#   start_jobset DIR CERTDIR    run the JobSet controller (log DIR/jobset.log, pid JOBSET_PID), its
#                               admission webhooks served on 127.0.0.1 with CERTDIR's certificate
#                               (webhook_certs) and registered by URL, as an install serves them
#                               (the defaulting webhook sets fields the controller dereferences,
#                               e.g. spec.network); returns once it is ready
: "${JOBSET_BIN:?}" "${JOBSET_SRC:?}"
JOBSET_CRDS=$JOBSET_SRC/config/components/crd/bases
JOBSET_RELEASE="JobSet $(git -C "$JOBSET_SRC" describe --tags) (kubernetes-sigs/jobset commit $(git -C "$JOBSET_SRC" rev-parse --short=9 HEAD))"

start_jobset() {
  local dir=$1 certs=$2 hook health
  hook=$(free_port) health=$(free_port)
  cat >"$dir/jobset-config.yaml" <<EOF
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
webhook: {port: $hook, host: 127.0.0.1, certDir: $certs}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "127.0.0.1:$health"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
EOF
  "$JOBSET_BIN" --config="$dir/jobset-config.yaml" --kubeconfig="$KUBECONFIG" >"$dir/jobset.log" 2>&1 &
  JOBSET_PID=$!
  wait_for "curl -sf http://127.0.0.1:$health/readyz" 120
  webhook_register "$JOBSET_SRC/config/components/webhook/manifests.yaml" "$hook" "$certs" jobset-
}
