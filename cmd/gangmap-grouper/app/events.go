package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// eventCacheSize is the number of entries in each of the three LRU caches of the grouper's Event
// correlator (client-go record.EventCorrelator, which every Event goes through before it is
// written): the spam filter's token bucket per source and object (a burst of 25 Events, then one
// per 5 minutes), the aggregator's record per similar Events (same object and reason: from the
// 10th with another message in 10 minutes, one combined Event), and the logger's count per
// identical Event (a repeat is a PATCH of the count, not a new Event). The rules are client-go's;
// they apply to an object, or an Event, while fewer than eventCacheSize others have come since
// its last Event (client-go's default, 4,096, kept ~6 MiB for 10,000 workloads' Events; 1,024
// keep ~1.6 MiB); an entry evicted sooner starts again. The measurement and the alternatives not
// chosen (the events.k8s.io/v1 recorder, the manager's deprecated Options.EventBroadcaster) are in
// bench/README.md, "Session 7: the Events' correlator".
const eventCacheSize = 1024

// events records the grouper's Events through one broadcaster whose correlator keeps
// eventCacheSize entries per cache (controller-runtime's recorder provider keeps client-go's
// default). As controller-runtime's, the broadcaster is made at the first Event, so that a
// manager that never starts leaks nothing, and it is shut down when the manager stops; an Event
// after that is dropped. It is a manager.Runnable for the stop only (on every replica).
type events struct {
	sink   typedcorev1.EventInterface
	scheme *runtime.Scheme
	log    logr.Logger

	mu          sync.Mutex
	broadcaster record.EventBroadcaster
	stopped     bool
}

var _ manager.LeaderElectionRunnable = (*events)(nil)

// correlation is the correlator's options: client-go's defaults but the caches' size.
var correlation = record.CorrelatorOptions{LRUCacheSize: eventCacheSize}

// get returns the broadcaster, made and started at the first call; nil once stopped.
func (e *events) get() record.EventBroadcaster {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.broadcaster == nil && !e.stopped {
		b := record.NewBroadcaster(record.WithCorrelatorOptions(correlation))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: e.sink})
		// As controller-runtime's provider: each Event in the log at V(1).
		b.StartEventWatcher(func(ev *corev1.Event) {
			e.log.V(1).Info(ev.Message, "type", ev.Type, "object", ev.InvolvedObject, "reason", ev.Reason)
		})
		e.broadcaster = b
	}
	return e.broadcaster
}

// Start implements manager.Runnable: it shuts the broadcaster down when ctx ends.
func (e *events) Start(ctx context.Context) error {
	<-ctx.Done()
	e.mu.Lock()
	b := e.broadcaster
	e.broadcaster, e.stopped = nil, true
	e.mu.Unlock()
	if b != nil {
		b.Shutdown()
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica records Events
// (the webhook's among them).
func (e *events) NeedLeaderElection() bool { return false }

// For returns the recorder of the component name (the Events' source), made at its first Event.
func (e *events) For(name string) record.EventRecorder {
	return lazyRecorder(sync.OnceValue(func() record.EventRecorder {
		if b := e.get(); b != nil {
			return b.NewRecorder(e.scheme, corev1.EventSource{Component: name})
		}
		return nil
	}))
}

// lazyRecorder is a component's recorder: it returns the recorder, nil when the Events had
// stopped at the first Event (its Events are dropped). Its Event and Eventf are client-go's
// recorder's AnnotatedEventf without annotations, as in client-go.
type lazyRecorder func() record.EventRecorder

// Event implements record.EventRecorder.
func (l lazyRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	l.AnnotatedEventf(object, nil, eventtype, reason, "%s", message)
}

// Eventf implements record.EventRecorder.
func (l lazyRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	l.AnnotatedEventf(object, nil, eventtype, reason, messageFmt, args...)
}

// AnnotatedEventf implements record.EventRecorder.
func (l lazyRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if r := l(); r != nil {
		r.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}

// recordingManager is the manager whose GetEventRecorderFor gives the grouper's recorders
// (events) instead of controller-runtime's; the manager's own leader election keeps its
// recorder (a few Events about the Lease).
type recordingManager struct {
	manager.Manager
	events *events
}

// GetEventRecorderFor implements manager.Manager.
func (m *recordingManager) GetEventRecorderFor(name string) record.EventRecorder {
	return m.events.For(name)
}

// withEvents returns the manager with the grouper's Event recorders (see events), sending
// through the manager's REST configuration and HTTP client.
func withEvents(mgr manager.Manager) (manager.Manager, error) {
	c, err := typedcorev1.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("the Events' client: %w", err)
	}
	ev := &events{sink: c.Events(""), scheme: mgr.GetScheme(), log: mgr.GetLogger().WithName("events")}
	if err := mgr.Add(ev); err != nil {
		return nil, err
	}
	return &recordingManager{Manager: mgr, events: ev}, nil
}
