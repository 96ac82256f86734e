package charttest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
)

// metricsCalls is what the grouper's metrics filter (app.MetricsAuth) asks the API server for one
// authorized scrape of /metrics: the permissions the grouper needs (perms) and the non-resource
// permission the scraper's SubjectAccessReview asks for (scraper).
type metricsCalls struct {
	perms   permSet
	scraper []rbacv1.PolicyRule
}

var (
	metricsCallsOnce sync.Once
	metricsCallsVal  metricsCalls
	metricsCallsErr  string
)

// metricsAuthCalls runs app.MetricsAuth in front of a handler against a fake API server that
// records each request as a permission (POST to a collection is create), authenticates the token
// and allows the review, and scrapes /metrics through it once.
func metricsAuthCalls(t *testing.T) metricsCalls {
	t.Helper()
	metricsCallsOnce.Do(func() {
		var mu sync.Mutex
		calls := metricsCalls{perms: permSet{}}
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// /apis/<group>/<version>/<resource>
			parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/apis/"), "/")
			if r.Method != http.MethodPost || len(parts) != 3 {
				http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			calls.perms[perm{group: parts[0], resource: parts[2], verb: "create"}] = true
			w.Header().Set("Content-Type", "application/json")
			switch parts[2] {
			case "tokenreviews":
				tr := &authenticationv1.TokenReview{}
				_ = json.NewDecoder(r.Body).Decode(tr)
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:prometheus-k8s"}}
				_ = json.NewEncoder(w).Encode(tr)
			case "subjectaccessreviews":
				sar := &authorizationv1.SubjectAccessReview{}
				_ = json.NewDecoder(r.Body).Decode(sar)
				if na := sar.Spec.NonResourceAttributes; na != nil {
					calls.scraper = append(calls.scraper, rbacv1.PolicyRule{NonResourceURLs: []string{na.Path}, Verbs: []string{na.Verb}})
				}
				sar.Status.Allowed = true
				_ = json.NewEncoder(w).Encode(sar)
			default:
				http.Error(w, "unexpected "+r.URL.Path, http.StatusBadRequest)
			}
		}))
		defer api.Close()
		filter, err := app.MetricsAuth(&rest.Config{Host: api.URL}, api.Client())
		if err != nil {
			metricsCallsErr = err.Error()
			return
		}
		h, err := filter(ctrl.Log, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
		if err != nil {
			metricsCallsErr = err.Error()
			return
		}
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", "Bearer scraper-token")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			metricsCallsErr = "the metrics filter answered " + rec.Result().Status + ": " + rec.Body.String()
			return
		}
		metricsCallsVal = calls
	})
	if metricsCallsErr != "" {
		t.Fatal(metricsCallsErr)
	}
	return metricsCallsVal
}

// TestMetricsAuthCalls: the grouper's metrics filter really makes a TokenReview and a
// SubjectAccessReview (get on /metrics) per scrape.
func TestMetricsAuthCalls(t *testing.T) {
	c := metricsAuthCalls(t)
	want := permSet{}
	want.add("authentication.k8s.io", "tokenreviews", "create")
	want.add("authorization.k8s.io", "subjectaccessreviews", "create")
	diffPerms(t, "the metrics filter's calls", c.perms, want)
	if !reflect.DeepEqual(c.scraper, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}) {
		t.Errorf("the scrape's SubjectAccessReview asks %+v", c.scraper)
	}
}

// TestMetricsReaderRBAC: with secure metrics the chart renders the ClusterRole
// <fullname>-metrics-reader granting exactly what the scrape's SubjectAccessReview asks, bound to
// metrics.readerServiceAccounts; a metrics certificate Secret is mounted at --metrics-cert-dir.
func TestMetricsReaderRBAC(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		o := grouperOptions(t, r)
		name := fullname + "-metrics-reader"
		role, binding := r.find("ClusterRole", name), r.find("ClusterRoleBinding", name)
		if !o.MetricsSecure {
			if role != nil || binding != nil {
				t.Error("plain HTTP metrics need no metrics-reader ClusterRole or binding")
			}
			return
		}
		if role == nil {
			t.Fatalf("--metrics-secure, yet no ClusterRole %s for scrapers", name)
		}
		cr := decodeStrict[rbacv1.ClusterRole](t, role)
		if !reflect.DeepEqual(cr.Rules, metricsAuthCalls(t).scraper) {
			t.Errorf("ClusterRole %s rules %+v, the scrape's SubjectAccessReview asks %+v", name, cr.Rules, metricsAuthCalls(t).scraper)
		}
		readers := r.values.Metrics.ReaderServiceAccounts
		if len(readers) == 0 {
			if binding != nil {
				t.Errorf("no metrics.readerServiceAccounts, yet ClusterRoleBinding %s is rendered", name)
			}
		} else {
			if binding == nil {
				t.Fatalf("metrics.readerServiceAccounts set, no ClusterRoleBinding %s", name)
			}
			crb := decodeStrict[rbacv1.ClusterRoleBinding](t, binding)
			var want []rbacv1.Subject
			for _, sa := range readers {
				want = append(want, rbacv1.Subject{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace})
			}
			if crb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}) || !reflect.DeepEqual(crb.Subjects, want) {
				t.Errorf("ClusterRoleBinding %s: roleRef %+v subjects %+v, want %s bound to %+v", name, crb.RoleRef, crb.Subjects, name, want)
			}
		}

		dep, c := grouper(t, r)
		if r.values.Metrics.CertSecret == "" {
			if o.MetricsCertDir != "" {
				t.Errorf("--metrics-cert-dir %s without metrics.certSecret", o.MetricsCertDir)
			}
			return
		}
		m := mountAt(c, o.MetricsCertDir)
		if o.MetricsCertDir == "" || m == nil || !m.ReadOnly {
			t.Fatalf("--metrics-cert-dir %q must be a read-only mount of metrics.certSecret", o.MetricsCertDir)
		}
		if v := volume(t, dep, m.Name); v.Secret == nil || v.Secret.SecretName != r.values.Metrics.CertSecret {
			t.Errorf("--metrics-cert-dir mounts %+v, want Secret %s", v, r.values.Metrics.CertSecret)
		}
	})
}

// TestNetworkPolicy: the optional NetworkPolicy selects the grouper's pods, limits ingress only,
// admits apiServerPeers to the webhook port, metricsPeers to the metrics port and anyone to the
// probe port, and nothing else.
func TestNetworkPolicy(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		nps := r.ofKind("NetworkPolicy")
		v := r.values.NetworkPolicy
		if !v.Enabled {
			if len(nps) > 0 {
				t.Errorf("networkPolicy.enabled is false, yet %d NetworkPolicies are rendered", len(nps))
			}
			return
		}
		if len(nps) != 1 {
			t.Fatalf("%d NetworkPolicies, want 1", len(nps))
		}
		np := decodeStrict[networkingv1.NetworkPolicy](t, nps[0])
		dep, c := grouper(t, r)
		if np.Namespace != namespace {
			t.Errorf("NetworkPolicy in %q, want %q", np.Namespace, namespace)
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("NetworkPolicy podSelector %+v does not select the grouper's pods (%v)", np.Spec.PodSelector, err)
		}
		if !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
			t.Errorf("policyTypes %v, want [Ingress] (the grouper's egress to the API server stays open)", np.Spec.PolicyTypes)
		}
		type rule struct {
			port  int32
			peers []map[string]any
		}
		var want []rule
		if r.values.Webhook.Enabled {
			want = append(want, rule{containerPort(c, "webhook"), v.APIServerPeers})
		}
		want = append(want, rule{containerPort(c, "metrics"), v.MetricsPeers}, rule{containerPort(c, "probes"), nil})
		if len(np.Spec.Ingress) != len(want) {
			t.Fatalf("%d ingress rules, want %d: %+v", len(np.Spec.Ingress), len(want), np.Spec.Ingress)
		}
		for i, w := range want {
			in := np.Spec.Ingress[i]
			if len(in.Ports) != 1 || in.Ports[0].Port == nil || in.Ports[0].Port.IntVal != w.port {
				t.Errorf("ingress rule %d ports %+v, want %d", i, in.Ports, w.port)
			}
			var got []map[string]any
			for _, p := range in.From {
				b, _ := json.Marshal(p)
				m := map[string]any{}
				_ = json.Unmarshal(b, &m)
				got = append(got, m)
			}
			if len(got)+len(w.peers) > 0 && !reflect.DeepEqual(got, w.peers) {
				t.Errorf("ingress rule %d (port %d) from %v, values say %v", i, w.port, got, w.peers)
			}
		}
	})
}
