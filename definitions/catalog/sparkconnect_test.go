package catalog_test

import "testing"

// SparkConnect (sparkoperator.k8s.io/v1alpha1, Spark operator v2.3.0+): a multi-role serving kind
// added by a project the catalog covers (issue 14 item 4), on the operator's own example
// (examples/sparkconnect/spark-connect.yaml, unchanged): a server pod from spec.server.template
// and executor.instances 2 executors, no GPU. The server creates the executors (Spark on
// Kubernetes), so only the server is required; the executors keep their sub-group.
func TestSparkConnect(t *testing.T) {
	checkPlan(t, "sparkconnect-server-2-executors.yaml", planWant{
		podGroups: []podGroupWant{{
			name: "pg-spark-connect-sparkconnect", minSubGroup: 1, pods: 3,
			subGroups: []subGroupWant{{"server", 1, 1}, {"executor", 2, 2}},
		}},
		roles: []roleWant{
			{"server", 1, 1, 1, 1, 0},
			{"executor", 2, 2, 2, 0, 0}, // instances 2; created by the server: held
		},
		notes: []string{"role executor is kept out of the gang minimum"},
	})
}

// TestSparkConnectPodLabels places pods with the labels the operator and Spark write: the
// server's spark-role "connect-server" (internal/controller/sparkconnect/util.go
// GetServerSelectorLabels, set in reconciler.go mutateServerPod) and the executors' spark-role
// "executor" with the connect-name label the operator passes as spark.kubernetes.executor.label.*
// (options.go executorConfOption; the operator selects them the same way, listExecutorPods).
func TestSparkConnectPodLabels(t *testing.T) {
	const file = "sparkconnect-server-2-executors.yaml"
	const pg = "pg-spark-connect-sparkconnect"
	assertOperatorPods(t, map[string]operatorPod{
		"server": {file, map[string]string{
			"key1": "value1", "key2": "value2", // the template's labels
			"spark-role":                        "connect-server",
			"spark-version":                     "4.0.4",
			"sparkoperator.k8s.io/connect-name": "spark-connect",
			"sparkoperator.k8s.io/launched-by-spark-operator": "true",
		}, pg, "server", true},
		"executor": {file, map[string]string{
			"spark-role":                        "executor",
			"spark-exec-id":                     "1",
			"sparkoperator.k8s.io/connect-name": "spark-connect",
			"sparkoperator.k8s.io/launched-by-spark-operator": "true",
		}, pg, "executor", true},
	})
}
