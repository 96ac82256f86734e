// Package charttest tests the Helm chart deploy/helm/gangmap (a chart directory cannot hold Go
// code). Its tests run the pinned helm CLI through hack/helm.sh (built once with `go install` and
// cached; a test fails, never skips, when helm cannot be built), `helm lint` and `helm template`
// the chart with each values file under testdata/, and check what is rendered: the RBAC rules
// against the API calls the grouper's code makes (least privilege, no wildcards), the admission
// webhook, the certificate, the flags the grouper parses, the definitions ConfigMap and its mount,
// the PodDisruptionBudget and ServiceMonitor conditions, the security context, and the Karta CRD
// copy.
package charttest
