package podview

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	sigsjson "sigs.k8s.io/json"
)

// slowDecode is DecodePod's reference decoding: sigs.k8s.io/json, case-sensitive, into podJSON.
func slowDecode(raw []byte) (*podJSON, error) {
	in := &podJSON{}
	return in, sigsjson.UnmarshalCaseSensitivePreserveInts(raw, in)
}

// fastDecodeSeeds are pods as the API server sends them and shapes at the edge of what
// decodeFast handles.
func fastDecodeSeeds(tb testing.TB) []string {
	tb.Helper()
	webhookPod, err := os.ReadFile("../webhook/testdata/jobset-worker-pod.json")
	if err != nil {
		tb.Fatal(err)
	}
	rich, err := json.Marshal(richPod())
	if err != nil {
		tb.Fatal(err)
	}
	return []string{
		string(webhookPod), string(rich),
		`{"metadata":{"name":"p","creationTimestamp":null,"labels":{},"annotations":null,"ownerReferences":[]},"spec":{"containers":[],"initContainers":null,"resources":null},"status":{}}`,
		`{"metadata":{"deletionTimestamp":"2026-12-01T10:00:00Z","ownerReferences":[{"apiVersion":"v1","kind":"K","name":"n","uid":"u","controller":false,"blockOwnerDeletion":null}]}}`,
		`{"spec":{"overhead":{"cpu":1,"memory":"1Gi"},"resources":{"limits":{"nvidia.com/gpu":"2"},"claims":[{"name":"c","request":"r"}]},"resourceClaims":[{"name":"g","resourceClaimName":"x"}]}}`,
		`{"spec":{"containers":[{"name":"a","restartPolicy":"Always","resources":null},{"name":"b","resources":{"requests":{"cpu":"100m"}}}]}}`,
		` { "kind" : "Pod" , "x" : [ 1 , -2.5e+3 , true , false , null , "\u00e9\n" , { "k\"" : [ ] } ] } `,
		`{"metadata":{"labels":{"a":"1","a":"2"}}}`,
		`{"metadata":{"name":"a"},"metadata":{"namespace":"b"}}`,
		`{"metadata":{"name":"\u0061"}}`,
		`{"metadata":{"labels":{"a":null}}}`,
		`{"meta\u0064ata":{"name":"a"}}`,
		`{"spec":{"schedulerName":3}}`, `{"metadata":{"labels":[1]}}`, `[]`, `null`, `{`, `{"a":01}`, `{"a":1}x`,
		`{"spec":{"containers":[{"resources":{"limits":{"cpu":"lots"}}}]}}`,
		`{"metadata":{"creationTimestamp":"yesterday"}}`,
		"{\"metadata\":{\"name\":\"\xff\"}}", "{\"x\":\"\x01\"}",
	}
}

// TestDecodeFastAgrees: decodeFast takes real pods (so admissions take the fast path) and agrees
// with sigs.k8s.io/json on every seed it accepts; every input sigs.k8s.io/json refuses, it
// refuses too.
func TestDecodeFastAgrees(t *testing.T) {
	seeds := fastDecodeSeeds(t)
	for i, raw := range seeds {
		checkFastDecode(t, []byte(raw))
		if _, ok := decodeFast([]byte(raw)); i < 6 && !ok {
			t.Errorf("seed %d: decodeFast declines a pod as the API server sends it:\n%s", i, raw)
		}
	}
}

func checkFastDecode(t *testing.T, raw []byte) {
	t.Helper()
	fast, ok := decodeFast(raw)
	slow, err := slowDecode(raw)
	switch {
	case ok && err != nil:
		t.Errorf("decodeFast accepts what sigs.k8s.io/json refuses (%v):\n%q", err, raw)
	case ok && !reflect.DeepEqual(fast, slow):
		t.Errorf("decodings differ for\n%q\nfast: %+v\nslow: %+v", raw, fast, slow)
	}
}

// FuzzDecodeFast: on any input, decodeFast either declines it or decodes exactly what
// sigs.k8s.io/json decodes (and never accepts what it refuses).
func FuzzDecodeFast(f *testing.F) {
	for _, s := range fastDecodeSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkFastDecode(t, raw) })
}

// TestDecodeOwnersAgrees: DecodeOwners reads real pods, and whenever it reports ok and DecodePod
// decodes the pod, both read the same namespace, scheduler name and owner references.
func TestDecodeOwnersAgrees(t *testing.T) {
	for i, raw := range fastDecodeSeeds(t) {
		checkDecodeOwners(t, []byte(raw))
		if _, ok := DecodeOwners([]byte(raw)); (i == 0 || i == 2) && !ok {
			t.Errorf("seed %d: DecodeOwners declines a pod as the API server sends it", i)
		}
	}
	for _, raw := range []string{`{"metadata":{"deletionTimestamp":"2026-12-01T10:00:00Z"}}`, `{"metadata":{},"metadata":{}}`,
		`{"spec":{"schedulerName":"a","schedulerName":"b"}}`, `{"metadata":{"ownerReferences":[{"uid":"a","uid":"b"}]}}`,
		`{"metadata":{"namespace":"a"}}x`} {
		if _, ok := DecodeOwners([]byte(raw)); ok {
			t.Errorf("%s: DecodeOwners reports ok; want it to leave the pod to DecodePod", raw)
		}
	}
}

func checkDecodeOwners(t *testing.T, raw []byte) {
	t.Helper()
	o, ok := DecodeOwners(raw)
	if !ok {
		return
	}
	d, err := DecodePod(raw)
	if err != nil {
		if _, serr := slowDecode(raw); serr == nil {
			t.Errorf("DecodePod fails where sigs.k8s.io/json does not: %v", err)
		}
		var syntax any
		if json.Unmarshal(raw, &syntax) != nil {
			t.Errorf("DecodeOwners accepts malformed JSON:\n%q", raw)
		}
		return // a kept field of the wrong type: the webhook admits the pod unchanged either way
	}
	want := Owners{Namespace: d.Pod.Namespace, SchedulerName: d.Pod.Spec.SchedulerName, References: d.Pod.OwnerReferences}
	if d.Pod.DeletionTimestamp != nil || !reflect.DeepEqual(o, want) {
		t.Errorf("DecodeOwners %+v, DecodePod %+v (deleting %v) for\n%q", o, want, d.Pod.DeletionTimestamp != nil, raw)
	}
}

// FuzzDecodeOwners: whenever DecodeOwners reports ok, the input is well-formed JSON, and DecodePod
// either reads the same owners, scheduler and namespace or refuses a field of the wrong type.
func FuzzDecodeOwners(f *testing.F) {
	for _, s := range fastDecodeSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecodeOwners(t, raw) })
}
