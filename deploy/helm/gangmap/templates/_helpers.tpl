{{/* Chart name, overridable. */}}
{{- define "gangmap.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: the release name when it contains the chart name, else "<release>-<chart>". */}}
{{- define "gangmap.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gangmap.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gangmap.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: grouper
{{- end -}}

{{- define "gangmap.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gangmap.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gangmap
{{- end -}}

{{- define "gangmap.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gangmap.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* "true" when the grouper elects a leader: more than one replica, or forced on. */}}
{{- define "gangmap.leaderElect" -}}
{{- if or (gt (int .Values.replicas) 1) .Values.leaderElection.enabled -}}true{{- end -}}
{{- end -}}

{{- define "gangmap.webhookServiceName" -}}
{{- printf "%s-webhook" (include "gangmap.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Where the webhook's certificate comes from: "certManager", "secret" (an existing Secret), or
"selfSigned" (the grouper issues and renews it: --webhook-self-signed); "" without the webhook.
*/}}
{{- define "gangmap.webhookCertSource" -}}
{{- if .Values.webhook.enabled -}}
{{- if .Values.webhook.certManager.enabled -}}certManager
{{- else if .Values.webhook.tls.secretName -}}secret
{{- else -}}selfSigned
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the webhook's certificate. */}}
{{- define "gangmap.webhookSecretName" -}}
{{- $source := include "gangmap.webhookCertSource" . -}}
{{- if eq $source "secret" -}}
{{- .Values.webhook.tls.secretName -}}
{{- else if eq $source "selfSigned" -}}
{{- printf "%s-webhook-cert" (include "gangmap.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-webhook-tls" (include "gangmap.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The DNS names the API server uses to call the webhook Service. */}}
{{- define "gangmap.webhookDNSNames" -}}
{{- $svc := include "gangmap.webhookServiceName" . -}}
{{- $ns := .Release.Namespace -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson -}}
{{- end -}}

{{/*
A metav1.LabelSelector in the label-selector string syntax the grouper's
--webhook-namespace-selector and --webhook-object-selector flags take (labels.Parse):
matchLabels as k=v, matchExpressions In as "k in (a,b)", NotIn as "k notin (a,b)",
Exists as "k", DoesNotExist as "!k"; requirements joined by ",".
*/}}
{{- define "gangmap.selectorString" -}}
{{- $reqs := list -}}
{{- $ml := .matchLabels | default dict -}}
{{- range $k := keys $ml | sortAlpha -}}
{{- $reqs = append $reqs (printf "%s=%s" $k (toString (get $ml $k))) -}}
{{- end -}}
{{- range $e := .matchExpressions | default list -}}
{{- $vals := join "," ($e.values | default list) -}}
{{- if eq $e.operator "In" -}}
{{- $reqs = append $reqs (printf "%s in (%s)" $e.key $vals) -}}
{{- else if eq $e.operator "NotIn" -}}
{{- $reqs = append $reqs (printf "%s notin (%s)" $e.key $vals) -}}
{{- else if eq $e.operator "Exists" -}}
{{- $reqs = append $reqs $e.key -}}
{{- else if eq $e.operator "DoesNotExist" -}}
{{- $reqs = append $reqs (printf "!%s" $e.key) -}}
{{- else -}}
{{- fail (printf "webhook selector: unknown matchExpressions operator %q (In, NotIn, Exists, DoesNotExist)" $e.operator) -}}
{{- end -}}
{{- end -}}
{{- join "," $reqs -}}
{{- end -}}

{{/* "true" when the grouper reads namespaces: the webhook is on with a namespace selector. */}}
{{- define "gangmap.readsNamespaces" -}}
{{- if and .Values.webhook.enabled (include "gangmap.selectorString" .Values.webhook.namespaceSelector) -}}true
{{- else if and .Values.webhook.enabled .Values.onboarding.enabled (include "gangmap.onboardingReadsNamespaces" .) -}}true{{- end -}}
{{- end -}}

{{/* "true" when an onboarding rule selects namespaces or takes its queue from a namespace label. */}}
{{- define "gangmap.onboardingReadsNamespaces" -}}
{{- range .Values.onboarding.rules }}{{ if or .namespaceSelector (and .queue .queue.fromNamespaceLabel) }}true{{ end }}{{ end -}}
{{- end -}}

{{/* "true" when the grouper marks workloads with KAI's skip annotation: markWorkloads, not in
dry-run, and a kaiVersion whose pod-grouper honours it (v0.15+; kairelease). */}}
{{- define "gangmap.marksWorkloads" -}}
{{- $v := toString .Values.kaiVersion -}}
{{- $honours := or (not (regexMatch "^v?[0-9]+\\.[0-9]+" $v)) (semverCompare ">=0.15.0-0" $v) -}}
{{- if and .Values.markWorkloads (not .Values.dryRun) $honours -}}true{{- end -}}
{{- end -}}

{{/* "true" when the grouper deletes stray PodGroups: a grace period above 0, not in dry-run. */}}
{{- define "gangmap.deletesStrays" -}}
{{- if and (not .Values.dryRun) (not (has (toString .Values.strayPodGroupGrace) (list "0" "0s" "0m" "0h" ""))) -}}true{{- end -}}
{{- end -}}

{{/* The webhook's failurePolicy: Fail in strict mode. */}}
{{- define "gangmap.failurePolicy" -}}
{{- if .Values.webhook.strict -}}Fail{{- else -}}{{ .Values.webhook.failurePolicy }}{{- end -}}
{{- end -}}

{{/* Checks on values that would otherwise fail at runtime. */}}
{{- define "gangmap.validate" -}}
{{- include "gangmap.checkDefinitionRBAC" . -}}
{{- if and .Values.onboarding.enabled (not .Values.webhook.enabled) -}}
{{- fail "onboarding.enabled needs webhook.enabled: pods are onboarded at creation by the webhook" -}}
{{- end -}}
{{- if .Values.webhook.strict -}}
{{- if not .Values.webhook.enabled -}}
{{- fail "webhook.strict needs webhook.enabled" -}}
{{- end -}}
{{- if lt (int .Values.replicas) 2 -}}
{{- fail (printf "webhook.strict needs replicas >= 2 (with the PodDisruptionBudget), not %v: with one replica every restart blocks pod creation" .Values.replicas) -}}
{{- end -}}
{{- if not (include "gangmap.selectorString" .Values.webhook.namespaceSelector) -}}
{{- fail "webhook.strict needs webhook.namespaceSelector: failurePolicy Fail for every namespace would block all pod creation (kube-system included) while gangmap is down" -}}
{{- end -}}
{{- end -}}
{{- if not (has .Values.webhook.failurePolicy (list "Ignore" "Fail")) -}}
{{- fail (printf "webhook.failurePolicy must be Ignore or Fail, not %q" (toString .Values.webhook.failurePolicy)) -}}
{{- end -}}
{{- $t := int .Values.webhook.timeoutSeconds -}}
{{- if or (lt $t 1) (gt $t 30) -}}
{{- fail (printf "webhook.timeoutSeconds must be between 1 and 30, not %v" .Values.webhook.timeoutSeconds) -}}
{{- end -}}
{{- /* A decision that may outlast the API server's wait makes a slow decision (a workload whose
plan takes long) a failed webhook call instead of a pod admitted unchanged: with failurePolicy
Fail (strict mode) its pod's creation is refused. Durations of one unit (ms, s, m) are checked;
others are left to the grouper's own bound (30s). */ -}}
{{- $dt := toString .Values.webhook.decisionTimeout -}}
{{- $ms := -1.0 -}}
{{- if regexMatch "^[0-9]+(\\.[0-9]+)?ms$" $dt -}}
{{- $ms = float64 (trimSuffix "ms" $dt) -}}
{{- else if regexMatch "^[0-9]+(\\.[0-9]+)?s$" $dt -}}
{{- $ms = mulf (float64 (trimSuffix "s" $dt)) 1000 -}}
{{- else if regexMatch "^[0-9]+(\\.[0-9]+)?m$" $dt -}}
{{- $ms = mulf (float64 (trimSuffix "m" $dt)) 60000 -}}
{{- end -}}
{{- if and .Values.webhook.enabled (ge $ms (mulf $t 1000)) -}}
{{- fail (printf "webhook.decisionTimeout (%s) must be below webhook.timeoutSeconds (%ds): a slower decision would time out the API server's call (with failurePolicy Fail, refusing the pod) instead of admitting the pod unchanged" $dt $t) -}}
{{- end -}}
{{- if and .Values.webhook.enabled (not .Values.webhook.certManager.enabled) .Values.webhook.tls.secretName (not .Values.webhook.tls.caBundle) -}}
{{- fail "webhook.tls.caBundle (base64 PEM of the CA) is required with webhook.tls.secretName" -}}
{{- end -}}
{{- range $k := concat (include "gangmap.workloadKinds" . | fromJsonArray) .Values.ownerKinds -}}
{{- if or (not (hasKey $k "apiGroup")) (not $k.resources) -}}
{{- fail (printf "workloadKinds, extraWorkloadKinds and ownerKinds entries need apiGroup and resources: %v" $k) -}}
{{- end -}}
{{- range $r := $k.resources -}}
{{- if or (contains "*" $r) (contains "*" $k.apiGroup) -}}
{{- fail (printf "workloadKinds, extraWorkloadKinds and ownerKinds take no wildcards: %s/%s" $k.apiGroup $r) -}}
{{- end -}}
{{- $res := lower (first (splitList "/" $r)) -}}
{{- if and (eq $k.apiGroup "") (has $res (list "secrets" "configmaps")) -}}
{{- fail (printf "workloadKinds, extraWorkloadKinds and ownerKinds may not name core %s: the grouper would get cluster-wide get/list/watch (and patch with markWorkloads) on every %s, which hold credentials and configuration; no workload is one" $res $res) -}}
{{- end -}}
{{- if and (eq $k.apiGroup "") (has $res (list "namespaces" "nodes" "persistentvolumes" "serviceaccounts")) -}}
{{- fail (printf "workloadKinds, extraWorkloadKinds and ownerKinds may not name core %s: cluster-wide patch on them (markWorkloads) would let the grouper (and whoever holds its token) relabel namespaces (Pod Security levels), untaint or relabel nodes, rebind volumes to another namespace's claims or change service accounts; no workload is one" $res) -}}
{{- end -}}
{{- if contains "/" $r -}}
{{- fail (printf "workloadKinds, extraWorkloadKinds and ownerKinds take resources, not subresources: %s/%s (rights on a subresource such as pods/exec are not rights on a workload; list the workload's own resource)" $k.apiGroup $r) -}}
{{- end -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/[a-z0-9]([-a-z0-9]*[a-z0-9])?)?$" (lower $r)) -}}
{{- fail (printf "workloadKinds, extraWorkloadKinds and ownerKinds take one resource name per list entry (lower-case letters, digits, '-', '.'): %q in %s matches nothing in RBAC; write resources: [a, b]" $r $k.apiGroup) -}}
{{- end -}}
{{- if eq $k.apiGroup "scheduling.run.ai" -}}
{{- fail (printf "workloadKinds, extraWorkloadKinds and ownerKinds may not name scheduling.run.ai/%s: KAI's own objects (queues hold every team's quota; PodGroups are what gangmap writes, granted by the chart on its own) are no workload, and patch on them would let the grouper (and whoever holds its token) change any team's quota or gang" $r) -}}
{{- end -}}
{{- if has $k.apiGroup (list "rbac.authorization.k8s.io" "admissionregistration.k8s.io" "certificates.k8s.io" "authentication.k8s.io" "authorization.k8s.io") -}}
{{- fail (printf "workloadKinds, extraWorkloadKinds and ownerKinds may not name %s/%s: read and patch rights on RBAC, admission or certificate objects would let the grouper (and whoever holds its token) grant itself more; no workload is one" $k.apiGroup $r) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- include "gangmap.validateExtraArgs" . -}}
{{- end -}}

{{/*
gangmap.validateExtraArgs refuses extraArgs that set a flag the chart sets for security from a
value: pflag keeps the last occurrence, so an extra --enable-http2=true would undo enableHTTP2's
default (HTTP/2 rapid reset, CVE-2023-44487) without the value saying so.
*/}}
{{- define "gangmap.validateExtraArgs" -}}
{{- $value := dict "--enable-http2" "enableHTTP2" "--metrics-secure" "metrics.secure" "--tls-min-version" "tlsMinVersion" "--metrics-cert-dir" "metrics.certSecret" "--webhook-cert-dir" "webhook.tls or webhook.certManager" "--webhook-self-signed" "webhook.tls or webhook.certManager" "--metrics-bind-address" "metrics.port" "--leader-elect" "leaderElection" -}}
{{- $why := dict "--enable-http2" "HTTP/2 is off against rapid-reset floods, CVE-2023-44487" "--metrics-secure" "the metrics endpoint's authentication and TLS" "--tls-min-version" "the webhook and metrics servers' TLS floor" "--metrics-cert-dir" "the metrics server's certificate" "--webhook-cert-dir" "the webhook's certificate" "--webhook-self-signed" "the webhook's certificate" "--metrics-bind-address" "the NetworkPolicy and Service follow the metrics port" "--leader-elect" "two leaders would both write PodGroups" -}}
{{- range $a := .Values.extraArgs -}}
{{- $flag := first (splitList "=" (toString $a)) -}}
{{- if hasKey $value $flag -}}
{{- fail (printf "extraArgs may not set %s: it would override the chart's own %s flag, a security setting (%s); set %s instead" (toString $a) $flag (get $why $flag) (get $value $flag)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The workload kinds the grouper may read: workloadKinds (the defaults, replaced when set) followed
by extraWorkloadKinds (added to them), as a JSON list of {apiGroup, resources}.
*/}}
{{- define "gangmap.workloadKinds" -}}
{{- concat (.Values.workloadKinds | default list) (.Values.extraWorkloadKinds | default list) | toJson -}}
{{- end -}}

{{/*
gangmap.pluralOf is Kubernetes' default plural of a Kind, as controller-gen and kubebuilder derive
it (k8s.io/gengo namer.NewAllLowercasePluralNamer): lower case, then "es" after s, x, z, ch and
sh, "ies" for a consonant followed by y, else "s".
*/}}
{{- define "gangmap.pluralOf" -}}
{{- $k := lower . -}}
{{- if or (hasSuffix "s" $k) (hasSuffix "x" $k) (hasSuffix "z" $k) (hasSuffix "ch" $k) (hasSuffix "sh" $k) -}}
{{- printf "%ses" $k -}}
{{- else if and (hasSuffix "y" $k) (not (regexMatch "[aeiou]y$" $k)) -}}
{{- printf "%sies" (trimSuffix "y" $k) -}}
{{- else -}}
{{- printf "%ss" $k -}}
{{- end -}}
{{- end -}}

{{/*
gangmap.checkDefinitionRBAC refuses to render when an inline definition's root kind is not among
the workload kinds the grouper may read: the grouper would group none of its pods (Event
GangmapRBACMissing) while the release looked fine. The resource is the kind's default plural
(gangmap.pluralOf); a CRD with another plural lists it and sets checkDefinitionRBAC: false.
*/}}
{{- define "gangmap.checkDefinitionRBAC" -}}
{{- if and .Values.definitions (ne (toString .Values.checkDefinitionRBAC) "false") -}}
{{- $granted := dict -}}
{{- range $k := include "gangmap.workloadKinds" . | fromJsonArray -}}
{{- range $r := $k.resources -}}
{{- $_ := set $granted (printf "%s/%s" $k.apiGroup $r) true -}}
{{- end -}}
{{- end -}}
{{- range $name, $def := .Values.definitions -}}
{{- $obj := $def -}}
{{- if kindIs "string" $def -}}
{{- $obj = fromYaml $def -}}
{{- if hasKey $obj "Error" -}}
{{- fail (printf "definitions.%s is not YAML: %s" $name (index $obj "Error")) -}}
{{- end -}}
{{- end -}}
{{- $root := dig "spec" "structureDefinition" "rootComponent" "kind" dict $obj -}}
{{- if and (kindIs "map" $root) (hasKey $root "kind") -}}
{{- $group := $root.group | default "" -}}
{{- $res := include "gangmap.pluralOf" $root.kind -}}
{{- if not (hasKey $granted (printf "%s/%s" $group $res)) -}}
{{- fail (printf "definitions.%s is for %s %s (resource %s.%s), which the grouper may not read: add {apiGroup: %q, resources: [%s]} to extraWorkloadKinds (workloadKinds replaces the default kinds; extraWorkloadKinds adds to them). A CRD whose plural is not %q: list its plural and set checkDefinitionRBAC: false" $name $group $root.kind $res $group $group $res $res) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
