// Package e2e holds gangmap's end-to-end tests (build tag e2e): a real kube-apiserver and etcd,
// the PodGroup and Karta CRDs, gangmap's grouper, and workloads whose operators the tests play.
// `make test` builds the control plane and runs them; without KUBEBUILDER_ASSETS they fail.
package e2e
