package realkai

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
)

// WaitEvent waits until an Event of reason on the object named involved in namespace ns exists,
// and returns its message (the latest such Event's when several are there by then).
func (c *Cluster) WaitEvent(ctx context.Context, ns, involved, reason string, timeout time.Duration) (string, error) {
	var msg string
	err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := c.Client.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == involved && e.Reason == reason {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	return msg, err
}
