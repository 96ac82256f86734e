package workloadmetrics

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// constCollector re-collects the given series as prometheus.MustNewConstMetric builds them (the
// series before session 7's own gauge type): the same description, label values and value.
type constCollector struct{ series []prometheus.Metric }

func (c constCollector) Describe(chan<- *prometheus.Desc) {}

func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.series {
		ch <- m
	}
}

// variableLabels reads a description's variable label names, in order, from its String form
// (client_golang keeps them unexported).
func variableLabels(t *testing.T, d *prometheus.Desc) []string {
	t.Helper()
	s := d.String()
	i := strings.Index(s, "variableLabels: {")
	require.GreaterOrEqual(t, i, 0, s)
	s = s[i+len("variableLabels: {"):]
	s = s[:strings.Index(s, "}")]
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// exposeAll encodes what reg gathers in every format a scrape may negotiate.
func exposeAll(t *testing.T, reg *prometheus.Registry) map[string][]byte {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string][]byte{}
	for name, f := range map[string]expfmt.Format{
		"text":          expfmt.NewFormat(expfmt.TypeTextPlain),
		"openmetrics":   expfmt.NewFormat(expfmt.TypeOpenMetrics),
		"protobuf":      expfmt.NewFormat(expfmt.TypeProtoDelim),
		"protobuf-text": expfmt.NewFormat(expfmt.TypeProtoText),
	} {
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, f)
		for _, mf := range mfs {
			require.NoError(t, enc.Encode(mf))
		}
		if c, ok := enc.(expfmt.Closer); ok {
			require.NoError(t, c.Close())
		}
		out[name] = buf.Bytes()
	}
	return out
}

// TestExpositionEqualsConstMetrics: every series of the exhibit (quotes, backslashes and a
// newline in a label value, a role and namespace in non-ASCII Unicode added here) is exposed
// byte for byte as the same series built with prometheus.MustNewConstMetric, in each format a
// scrape may negotiate: text, OpenMetrics, delimited protobuf and protobuf text.
func TestExpositionEqualsConstMetrics(t *testing.T) {
	tr := exhibitTracker(t)
	require.True(t, tr.SetWorkload(Workload{UID: "g-unicode", Namespace: "équipe-ü", Kind: "Job.batch", Name: "läufer",
		GPUs: 2, GangGPUs: 1, Roles: []Role{{Name: "räder-🚀 \"x\"\n", GPUs: 2, GangGPUs: 1}}}))
	setPod(tr, "g-unicode", types.NamespacedName{Namespace: "équipe-ü", Name: "p-0"}, "räder-🚀 \"x\"\n", "Running")

	ch := make(chan prometheus.Metric, 10000)
	tr.Collect(ch)
	close(ch)
	var consts []prometheus.Metric
	gauges := 0
	for m := range ch {
		g, ok := m.(*gauge)
		if !ok {
			consts = append(consts, m) // the tracker's own (already const) series
			continue
		}
		gauges++
		var d dto.Metric
		require.NoError(t, g.Write(&d))
		byName := map[string]string{}
		for _, lp := range d.Label {
			byName[lp.GetName()] = lp.GetValue()
		}
		var values []string
		for _, l := range variableLabels(t, g.Desc()) {
			v, ok := byName[l]
			require.True(t, ok, "label %s of %s", l, g.Desc())
			values = append(values, v)
		}
		consts = append(consts, prometheus.MustNewConstMetric(g.Desc(), prometheus.GaugeValue, d.GetGauge().GetValue(), values...))
	}
	require.Greater(t, gauges, 190)

	ours := prometheus.NewPedanticRegistry()
	require.NoError(t, ours.Register(tr))
	theirs := prometheus.NewRegistry()
	require.NoError(t, theirs.Register(constCollector{consts}))
	want, got := exposeAll(t, theirs), exposeAll(t, ours)
	for name := range want {
		require.Equal(t, string(want[name]), string(got[name]), name)
	}
	require.Contains(t, string(got["text"]), `role="räder-🚀 \"x\"\n"`)
}
