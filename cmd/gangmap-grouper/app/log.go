package app

import (
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func zapLogger(o *Options) logr.Logger { return zap.New(zap.UseFlagOptions(&o.Zap)) }
