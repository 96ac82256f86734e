#!/usr/bin/env bash
# hack/record-status/appwrapper.sh: record the AppWrapper (workload.codeflare.dev/v1beta2) states
# of the status corpus with AppWrapper's own controller (project-codeflare/appwrapper v1.2.1,
# commit b47a99e, main package cmd/main.go), built outside this repository:
#
#   git clone https://github.com/project-codeflare/appwrapper $OPERATOR_SRC && git -C $OPERATOR_SRC checkout v1.2.1
#   (cd $OPERATOR_SRC && CGO_ENABLED=0 go build -o $OPERATOR_BIN ./cmd)
#   OPERATOR_BIN=... OPERATOR_SRC=... KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) bash hack/record-status/appwrapper.sh [DIR]
#
# The controller runs standalone (v1.2.1 has no Kueue code of its own: Kueue's AppWrapper
# integration lives in Kueue), configured by the ConfigMap appwrapper-operator-config in $NAMESPACE
# (cmd/main.go loadIntoOrCreate): webhooksEnabled false, so no cert rotation and no webhook server;
# metrics and health endpoints off. The AppWrapper is created as its mutating webhook would leave it
# (internal/webhook/appwrapper_webhook.go Default: the user labels only; pod sets are not defaulted
# there, the controller infers them into status.componentStatus). Spec: samples/wrapped-pod.yaml
# without the Kueue queue label (no Kueue, spec.suspend false: the controller deploys at once).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OPERATOR_BIN:?path of the built AppWrapper manager binary}" "${OPERATOR_SRC:?AppWrapper v1.2.1 source checkout}"
source hack/record-status/lib.sh
DIR=${1:-$(mktemp -d)}
OUT=definitions/catalog/tests/status/workload-codeflare-dev-appwrapper-v1beta2
NS=default
start_cluster "$DIR" --crds "$OPERATOR_SRC/config/crd/bases"

kubectl create namespace appwrapper-system >/dev/null
kubectl create configmap appwrapper-operator-config -n appwrapper-system --from-literal=config.yaml='webhooksEnabled: false
controllerManager: {metrics: {bindAddress: "0"}, health: {bindAddress: "0"}}' >/dev/null
NAMESPACE=appwrapper-system "$OPERATOR_BIN" >"$DIR/appwrapper.log" 2>&1 &
OPERATOR_PID=$!
trap 'kill ${OPERATOR_PID:-} ${WATCH_PID:-} 2>/dev/null || true; stop_cluster' EXIT
wait_for "grep -q 'Starting workers.*AppWrapper' '$DIR/appwrapper.log'" 120

# Every version of every AppWrapper, so the short-lived phases (Suspending, Resuming) are kept too.
kubectl get appwrappers -n $NS -w -o json >"$DIR/watch.json" 2>/dev/null &
WATCH_PID=$!

# The webhook's Default labels the AppWrapper with the creating user's name and uid (sanitized).
sanitize() { head -c 63 | tr -c -- '-_.[:alnum:]' _ | sed 's/^[-_.]*//; s/[-_.]*$//'; }
user=$(kubectl auth whoami -o jsonpath='{.status.userInfo.username}' | sanitize)
uid=$(kubectl auth whoami -o jsonpath='{.status.userInfo.uid}' | sanitize)

create() { # create NAME [ANNOTATIONS-JSON]
  local ann=${2:-'{}'}
  yq -y --arg name "$1" --arg user "$user" --arg uid "$uid" --argjson ann "$ann" '
    .metadata.name = $name | .metadata.labels = {"workload.codeflare.dev/user": $user, "workload.codeflare.dev/userid": $uid}
    | if $ann == {} then . else .metadata.annotations = $ann end' "$OPERATOR_SRC/samples/wrapped-pod.yaml" |
    kubectl create -n $NS -f - >/dev/null
}
phase() { kubectl get appwrapper -n $NS "$1" -o jsonpath='{.status.phase}'; }
cond() { kubectl get appwrapper -n $NS "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}"; }
# from_watch NAME PHASE: the last version of NAME the watch saw in PHASE, cleaned as snapshot does.
from_watch() {
  jq -s --arg n "$1" --arg p "$2" '[.[] | select(.metadata.name == $n and .status.phase == $p)] | last' "$DIR/watch.json" | clean
}
record() { # record STATE HOW < object YAML
  record_to "$OUT/$1" "recorded $(date -u +%F) by hack/record-status/appwrapper.sh: the object AppWrapper v1.2.1 (project-codeflare/appwrapper commit b47a99e) wrote, its controller running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes; the script set pod phases as containers exiting would), standalone with webhooks off (see the script)." "$2"
}

# running, suspending, suspended, resuming, completed: one AppWrapper through its lifecycle.
create sample-pod
wait_for "[[ \$(cond sample-pod PodsReady) == True ]]" 120
snapshot appwrappers sample-pod $NS | record running "Reached: samples/wrapped-pod.yaml created (no queue label, spec.suspend unset), the controller deployed the Pod (Suspended, Resuming, Running), kwok ran it; snapshot once PodsReady was True."
kubectl patch appwrapper -n $NS sample-pod --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
wait_for "[[ \$(phase sample-pod) == Suspended ]]" 120
snapshot appwrappers sample-pod $NS | record suspended "Reached: the running AppWrapper's spec.suspend set true (as Kueue or a user would); the controller went Suspending, deleted the Pod, then Suspended; snapshot in Suspended."
from_watch sample-pod Suspending | record suspending "Reached: the running AppWrapper's spec.suspend set true; the last version in phase Suspending a watch saw (the controller deleting the Pod)."
kubectl patch appwrapper -n $NS sample-pod --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
wait_for "[[ \$(phase sample-pod) == Running && \$(cond sample-pod PodsReady) == True ]]" 120
from_watch sample-pod Resuming | record resuming "Reached: the suspended AppWrapper's spec.suspend set false; the last version in phase Resuming a watch saw (the controller creating the Pod again), before Running."
pod_succeed $NS sample-pod
wait_for "[[ \$(phase sample-pod) == Succeeded ]]" 120
snapshot appwrappers sample-pod $NS | record completed "Reached: after the suspend and resume above, the running Pod's container exited 0 (pod_succeed); the controller went Succeeded; snapshot in Succeeded."
kubectl delete appwrapper -n $NS sample-pod --wait=true >/dev/null

# failed: retry limit 0 and no failure grace period (the annotations of site/_pages/arch-fault-tolerance.md).
create sample-pod '{"workload.codeflare.dev.appwrapper/retryLimit":"0","workload.codeflare.dev.appwrapper/failureGracePeriodDuration":"0s"}'
wait_for "[[ \$(cond sample-pod PodsReady) == True ]]" 120
pod_fail $NS sample-pod 1
# The controller looks at failed pods when it requeues (every minute while Running).
wait_for "[[ \$(phase sample-pod) == Failed && \$(cond sample-pod ResourcesDeployed) == False ]]" 180
snapshot appwrappers sample-pod $NS | record failed "Reached: samples/wrapped-pod.yaml with annotations retryLimit 0 and failureGracePeriodDuration 0s; once Running with PodsReady, the Pod's container exited 1 (pod_fail); the controller found the failed pod, went Failed (retries exhausted) and deleted the Pod; snapshot then."
echo "recorded into $OUT (logs in $DIR)"
