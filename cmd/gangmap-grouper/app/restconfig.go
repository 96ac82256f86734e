package app

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RestConfig finds the cluster as controller-runtime's config.GetConfig does, then applies --qps
// and --burst: --kubeconfig; else $KUBECONFIG (one or more files, merged); else the in-cluster
// config; else ~/.kube/config. Unlike config.GetConfig it logs nothing (no error log with a stack
// trace when the in-cluster config is missing) and says in one line what it tried when it finds
// nothing.
func (o *Options) RestConfig() (*rest.Config, error) {
	cfg, err := o.loadRestConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	return cfg, nil
}

// inClusterConfig is rest.InClusterConfig; tests replace it.
var inClusterConfig = rest.InClusterConfig

func (o *Options) loadRestConfig() (*rest.Config, error) {
	if o.Kubeconfig != "" {
		cfg, err := kubeconfigFiles(&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig})
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", o.Kubeconfig, err)
		}
		return cfg, nil
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		// As config.GetConfig: with $KUBECONFIG set, the in-cluster config is not tried.
		cfg, err := kubeconfigFiles(&clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(env)})
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("$KUBECONFIG (%s): no configuration there (missing or empty files)", env)
		}
		if err != nil {
			return nil, fmt.Errorf("$KUBECONFIG (%s): %w", env, err)
		}
		return cfg, nil
	}
	cfg, inClusterErr := inClusterConfig()
	if inClusterErr == nil {
		return cfg, nil
	}
	home, err := homeKubeconfig()
	if err != nil {
		return nil, err
	}
	cfg, err = kubeconfigFiles(&clientcmd.ClientConfigLoadingRules{Precedence: []string{home}})
	switch {
	case err == nil:
		return cfg, nil
	case !clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("%s: %w", home, err)
	case !errors.Is(inClusterErr, rest.ErrNotInCluster):
		// In a pod, but its service account credentials are unusable: say so rather than
		// blame the missing ~/.kube/config.
		return nil, fmt.Errorf("in-cluster config: %w", inClusterErr)
	}
	state := "does not exist"
	if fileExists(home) {
		state = "holds no configuration"
	}
	return nil, fmt.Errorf("no Kubernetes configuration: not running in a cluster, and neither --kubeconfig nor $KUBECONFIG is set and %s %s", home, state)
}

// kubeconfigFiles loads a client configuration from kubeconfig files, without prompting.
func kubeconfigFiles(rules *clientcmd.ClientConfigLoadingRules) (*rest.Config, error) {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// homeKubeconfig is ~/.kube/config, with $HOME read now (client-go reads it once at start) and,
// as config.GetConfig does, the user's home directory when $HOME is unset.
func homeKubeconfig() (string, error) {
	home, ok := os.LookupEnv("HOME")
	if !ok {
		u, err := user.Current()
		if err != nil {
			return "", fmt.Errorf("no Kubernetes configuration: $HOME is unset and the current user is unknown: %w", err)
		}
		home = u.HomeDir
	}
	return filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
