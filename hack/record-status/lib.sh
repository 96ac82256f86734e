# hack/record-status/lib.sh: shell functions for the status-corpus recording scripts
# (hack/record-status/<operator>.sh). Source it; it needs KUBEBUILDER_ASSETS (kubectl), jq and yq.
#
#   start_cluster DIR [--crds PATH]...   run hack/statuscluster in the background, wait for READY,
#                                        export KUBECONFIG=DIR/kubeconfig; stop_cluster stops it
#   pod_succeed NS NAME                  set a bound pod's status as the kubelet does when every
#                                        container exited 0 (phase Succeeded, Completed)
#   pod_fail NS NAME [CODE]              ... exited CODE (default 1): phase Failed, reason Error
#                                        (a restartPolicy Never pod: the kubelet restarts others)
#   pod_crashloop NS NAME RESTARTS [CODE] a restartPolicy OnFailure/Always pod whose container
#                                        exited CODE RESTARTS times: Running, CrashLoopBackOff
#   pods NS SELECTOR                     names of the pods matching a label selector
#   free_port                            a TCP port on 127.0.0.1 free a moment ago
#   wait_for 'SHELL CONDITION' SECONDS   poll every second until the condition holds, or fail
#   snapshot RESOURCE NAME NS            the object as YAML, without managedFields, resourceVersion,
#                                        uid and kubectl's last-applied annotation
#   watched FILE FILTER                  the first version a `kubectl get -w -o json` stream saw
#                                        matching a jq filter, cleaned as snapshot
#   record_to DIR SOURCE HOW             DIR/manifest.yaml: "# Source: SOURCE", HOW, then stdin
set -euo pipefail

: "${KUBEBUILDER_ASSETS:?set KUBEBUILDER_ASSETS=\$(bash hack/control-plane.sh)}"
kubectl() { "$KUBEBUILDER_ASSETS/kubectl" "$@"; }

start_cluster() {
  local dir=$1; shift
  mkdir -p "$dir"
  go build -o "$dir/statuscluster" ./hack/statuscluster
  "$dir/statuscluster" --log-dir "$dir" "$@" >"$dir/statuscluster.out" 2>"$dir/statuscluster.log" &
  STATUSCLUSTER_PID=$!
  trap stop_cluster EXIT
  wait_for "grep -q READY '$dir/statuscluster.out' || ! kill -0 $STATUSCLUSTER_PID" 300
  grep -q READY "$dir/statuscluster.out" || { tail -30 "$dir/statuscluster.log" >&2; return 1; }
  export KUBECONFIG=$dir/kubeconfig
}

stop_cluster() {
  [[ -n ${STATUSCLUSTER_PID:-} ]] || return 0
  kill "$STATUSCLUSTER_PID" 2>/dev/null || true
  wait "$STATUSCLUSTER_PID" 2>/dev/null || true
  STATUSCLUSTER_PID=
}

# pod_exit NS NAME CODE: every container terminated with CODE; the pod Succeeded (0) or Failed.
pod_exit() {
  local ns=$1 name=$2 code=$3
  kubectl get pod -n "$ns" "$name" -o json | jq --argjson code "$code" '
    (now | strftime("%Y-%m-%dT%H:%M:%SZ")) as $now
    | .status.phase = (if $code == 0 then "Succeeded" else "Failed" end)
    | .status.conditions |= map(if .type == "Ready" or .type == "ContainersReady"
        then .status = "False" | .reason = "PodCompleted" | .lastTransitionTime = $now else . end)
    | .status.containerStatuses |= map(.ready = false | .started = false
        | .state = {terminated: {exitCode: $code, reason: (if $code == 0 then "Completed" else "Error" end),
                    startedAt: (.state.running.startedAt // $now), finishedAt: $now}})' |
    kubectl replace --subresource=status -f - >/dev/null
}
# pod_crashloop NS NAME RESTARTS [CODE]: what the kubelet reports for a restartPolicy OnFailure
# container (JobSet's default) that exited CODE RESTARTS times: the pod stays Running, the
# container waits in CrashLoopBackOff; the Job controller counts the restarts against backoffLimit.
pod_crashloop() {
  kubectl get pod -n "$1" "$2" -o json | jq --argjson n "$3" --argjson code "${4:-1}" --arg pod "$2" '
    (now | strftime("%Y-%m-%dT%H:%M:%SZ")) as $now
    | .status.conditions |= map(if .type == "Ready" or .type == "ContainersReady"
        then .status = "False" | .reason = "ContainersNotReady" | .lastTransitionTime = $now else . end)
    | .status.containerStatuses |= map(.ready = false | .started = false | .restartCount = $n
        | .lastState = {terminated: {exitCode: $code, reason: "Error", startedAt: $now, finishedAt: $now}}
        | .state = {waiting: {reason: "CrashLoopBackOff", message: "back-off 5m0s restarting failed container=\(.name) pod=\($pod)"}})' |
    kubectl replace --subresource=status -f - >/dev/null
}

pod_succeed() { pod_exit "$1" "$2" 0; }
pod_fail() { pod_exit "$1" "$2" "${3:-1}"; }

# free_port: a TCP port on 127.0.0.1 free a moment ago (for an operator's webhook or metrics server).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

pods() { kubectl get pods -n "$1" -l "$2" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'; }

wait_for() {
  local cond=$1 timeout=$2 i
  for ((i = 0; i < timeout; i++)); do
    if eval "$cond" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  echo "wait_for: timed out after ${timeout}s: $cond" >&2
  return 1
}

# clean: an object (JSON on stdin) without managedFields, resourceVersion, uid and kubectl's
# last-applied annotation, as YAML.
clean() {
  jq 'del(.metadata.managedFields, .metadata.resourceVersion, .metadata.uid,
      .metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"])
    | if .metadata.annotations == {} then del(.metadata.annotations) else . end' | yq -y .
}

snapshot() { kubectl get "$1" "$2" -n "$3" -o json | clean; }

# watched FILE FILTER: the first version in a `kubectl get -w -o json` stream (FILE) matching the
# jq FILTER, cleaned as snapshot cleans (a state the controller leaves within a second).
watched() { jq -s 'map(select('"$2"'))[0]' "$1" | clean; }

# record_to DIR SOURCE HOW: write DIR/manifest.yaml, the object YAML on stdin under a header
# "# Source: SOURCE" and HOW (how the state was reached), both wrapped at 98 columns.
record_to() {
  mkdir -p "$1"
  { fmt -w 96 <<<"Source: $2" | sed 's/^/# /'
    fmt -w 96 <<<"$3" | sed 's/^/# /'
    cat; } >"$1/manifest.yaml"
  echo "recorded $1" >&2
}
