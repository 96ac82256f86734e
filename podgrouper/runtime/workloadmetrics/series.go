package workloadmetrics

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gauge is one series of one scrape: a prometheus.Metric whose Write hands out label pairs and a
// gauge value shared with other series of the scrape, so a Write allocates nothing. A gauge
// lives in its scrape's chunks and is never changed once built (the registry keeps what Write
// returns until the scrape is encoded; a dto.Metric is immutable by its contract). Against
// prometheus.MustNewConstMetric: bench/README.md, "Session 7: the workload metrics scrape".
type gauge struct {
	desc *prometheus.Desc
	// labels are sorted by name, as the registry requires: the workload's kind, name and
	// namespace, then the series' own (phase, podgroup, role, status, type).
	labels []*dto.LabelPair
	value  *dto.Gauge
}

var _ prometheus.Metric = (*gauge)(nil)

// Desc implements prometheus.Metric.
func (g *gauge) Desc() *prometheus.Desc { return g.desc }

// Write implements prometheus.Metric: the series' labels and value, shared, not copied.
func (g *gauge) Write(out *dto.Metric) error {
	out.Label = g.labels
	out.Gauge = g.value
	return nil
}

// labelPair is a dto.LabelPair with the value it points to.
type labelPair struct {
	pair  dto.LabelPair
	value string
}

// valueGauge is a dto.Gauge with the value it points to.
type valueGauge struct {
	gauge dto.Gauge
	v     float64
}

// Label names, pointed to by every series' label pairs (never written).
var (
	labelKind, labelName, labelNamespace = "kind", "name", "namespace"
	labelPhase, labelPodGroup, labelRole = "phase", "podgroup", "role"
	labelStatus, labelType               = "status", "type"
)

// chunk is the number of series, label pointers, label pairs or gauge values a scrape allocates
// at once.
const chunk = 1024

// maxShared bounds the label pairs and the gauge values a scrape shares among its series (the
// sizes of its tables): past it, a series gets pairs and values of its own.
const maxShared = 4096

// pairKey is a label pair's name (one of the label name variables) and value.
type pairKey struct {
	name  *string
	value string
}

// scrape holds the series one Collect builds, in chunks: the series themselves, their label
// slices (cut from chunks of pointers), their label pairs and their gauge values. A label pair
// or a value seen before in the scrape is shared (a role, phase, status, kind, namespace or
// count appears in many workloads' series); a workload's name pair is shared by its series only.
// Chunks are never grown, so pointers into them stay valid until the scrape is encoded; then
// all of it is garbage at once. Not safe for concurrent use (one per Collect).
type scrape struct {
	series [][]gauge // chunks of chunk series, the last one partly filled
	n      int
	ptrs   []*dto.LabelPair
	pairs  []labelPair
	values []valueGauge
	pairOf map[pairKey]*dto.LabelPair
	valOf  map[uint64]*dto.Gauge
}

// pair makes a label pair of the name and value; a value that is not valid UTF-8 (a role name is
// data of the workload's definition) has its invalid bytes replaced by U+FFFD, so that the
// registry does not fail the whole scrape for one series.
func (s *scrape) pair(name *string, value string) *dto.LabelPair {
	if !utf8.ValidString(value) {
		value = strings.ToValidUTF8(value, "\uFFFD")
	}
	if len(s.pairs) == cap(s.pairs) {
		s.pairs = make([]labelPair, 0, chunk)
	}
	s.pairs = s.pairs[:len(s.pairs)+1]
	p := &s.pairs[len(s.pairs)-1]
	p.value = value
	p.pair.Name, p.pair.Value = name, &p.value
	return &p.pair
}

// shared returns the scrape's label pair of the name and value, made at its first use.
func (s *scrape) shared(name *string, value string) *dto.LabelPair {
	k := pairKey{name: name, value: value}
	if p, ok := s.pairOf[k]; ok {
		return p
	}
	p := s.pair(name, value)
	if s.pairOf == nil {
		s.pairOf = make(map[pairKey]*dto.LabelPair)
	}
	if len(s.pairOf) < maxShared {
		s.pairOf[k] = p
	}
	return p
}

// value returns a gauge of the value: the scrape's gauge of equal bits (so 0 and -0 differ).
func (s *scrape) value(v float64) *dto.Gauge {
	bits := math.Float64bits(v)
	if g, ok := s.valOf[bits]; ok {
		return g
	}
	if len(s.values) == cap(s.values) {
		s.values = make([]valueGauge, 0, chunk)
	}
	s.values = s.values[:len(s.values)+1]
	g := &s.values[len(s.values)-1]
	g.v = v
	g.gauge.Value = &g.v
	if s.valOf == nil {
		s.valOf = make(map[uint64]*dto.Gauge)
	}
	if len(s.valOf) < maxShared {
		s.valOf[bits] = &g.gauge
	}
	return &g.gauge
}

// labels cuts a label slice of the workload's pairs followed by the given ones (sorted by name,
// all after "namespace"), with its capacity its length.
func (s *scrape) labels(workload []*dto.LabelPair, extra ...*dto.LabelPair) []*dto.LabelPair {
	n := len(workload) + len(extra)
	if len(s.ptrs)+n > cap(s.ptrs) {
		s.ptrs = make([]*dto.LabelPair, 0, max(chunk, n))
	}
	start := len(s.ptrs)
	s.ptrs = append(s.ptrs, workload...)
	s.ptrs = append(s.ptrs, extra...)
	return s.ptrs[start:len(s.ptrs):len(s.ptrs)]
}

// add adds a series of the description, labels (from labels) and value.
func (s *scrape) add(d *prometheus.Desc, labels []*dto.LabelPair, v float64) {
	if s.n%chunk == 0 {
		s.series = append(s.series, make([]gauge, chunk))
	}
	s.series[s.n/chunk][s.n%chunk] = gauge{desc: d, labels: labels, value: s.value(v)}
	s.n++
}

// send sends the series added since series number from (0: all), and returns the number of
// series added.
func (s *scrape) send(ch chan<- prometheus.Metric, from int) int {
	for i := from; i < s.n; i++ {
		ch <- &s.series[i/chunk][i%chunk]
	}
	return s.n
}
