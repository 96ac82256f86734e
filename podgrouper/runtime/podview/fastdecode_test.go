package podview

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"unsafe"

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

// TestDecodeFastAgrees: decodeFast and ScanPod's marks take real pods (so admissions take the
// fast path) and agree with sigs.k8s.io/json on every seed they accept; every input
// sigs.k8s.io/json refuses, they refuse too.
func TestDecodeFastAgrees(t *testing.T) {
	seeds := fastDecodeSeeds(t)
	for i, raw := range seeds {
		checkFastDecode(t, []byte(raw))
		if _, ok := decodeFast([]byte(raw)); i < 6 && !ok {
			t.Errorf("seed %d: decodeFast declines a pod as the API server sends it:\n%s", i, raw)
		}
		p := ScanPod([]byte(raw))
		if _, ok := p.decodeMarks(); i < 6 && (!p.fast || !ok) {
			t.Errorf("seed %d: ScanPod (fast %v) or its marks (%v) decline a pod as the API server sends it:\n%s", i, p.fast, ok, raw)
		}
	}
}

// TestScannedKeepsNothingOfTheJSON: the owners and the pod of a scan are copies: changing the
// JSON afterwards (the request's buffer reused) changes neither.
func TestScannedKeepsNothingOfTheJSON(t *testing.T) {
	raw := []byte(fastDecodeSeeds(t)[0])
	want, err := DecodePod(bytes.Clone(raw))
	if err != nil {
		t.Fatal(err)
	}
	p := ScanPod(raw)
	o, ok := p.Owners()
	if !ok {
		t.Fatal("the scan declines the webhook's test pod")
	}
	got, err := p.Pod()
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		raw[i] = 'x'
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Pod after the JSON changed:\n%+v\nwant\n%+v", got.Pod, want.Pod)
	}
	wantOwners := Owners{Namespace: want.Pod.Namespace, SchedulerName: want.Pod.Spec.SchedulerName, References: want.Pod.OwnerReferences}
	if !reflect.DeepEqual(o, wantOwners) || o.SchedulerName == "" || len(o.References) == 0 {
		t.Errorf("Owners after the JSON changed: %+v, want %+v", o, wantOwners)
	}
}

// TestScannedPodIdentityKeepsNotTheJSON: the decoded pod's namespace, name, UID and owner
// references do not point into the copy of the JSON the other decoded strings share, so a cache
// keyed by them (the owner walker's) does not keep a whole pod's JSON alive per entry.
func TestScannedPodIdentityKeepsNotTheJSON(t *testing.T) {
	p := ScanPod([]byte(fastDecodeSeeds(t)[0]))
	d, err := p.Pod()
	if err != nil || !p.fast {
		t.Fatalf("the scan declines the webhook's test pod (fast %v): %v", p.fast, err)
	}
	pod := d.Pod
	// A pod on CREATE has a generateName, and no name or UID yet.
	if len(pod.Labels) == 0 || len(pod.OwnerReferences) == 0 || pod.Namespace == "" || pod.GenerateName == "" {
		t.Fatalf("the test pod lacks labels, owners, namespace or generateName: %+v", pod.ObjectMeta)
	}
	// The labels still share one copy of the JSON: find it through a label value.
	var shared string
	for _, v := range pod.Labels {
		if len(v) > 0 {
			shared = v
			break
		}
	}
	inCopy := func(s string) bool {
		if s == "" || shared == "" {
			return false
		}
		// Strings of one allocation lie within a few KB of each other; a copy of its own does not
		// start inside the pod's JSON copy, which is at most len(raw) bytes long.
		a, b := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(shared)))
		d := int64(a) - int64(b)
		return d > -int64(len(p.raw)) && d < int64(len(p.raw))
	}
	if !inCopy(shared) {
		t.Fatal("the check does not see the label in the JSON's copy")
	}
	kept := []string{pod.Namespace, pod.GenerateName}
	for _, r := range pod.OwnerReferences {
		kept = append(kept, r.APIVersion, r.Kind, r.Name, string(r.UID))
	}
	for _, s := range kept {
		if inCopy(s) {
			t.Errorf("%q points into the pod's JSON copy", s)
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
	// ScanPod then Pod is DecodePod, whatever the input (its fallback included).
	sp := ScanPod(raw)
	scanned, serr := sp.Pod()
	whole, werr := DecodePod(raw)
	switch {
	case (serr == nil) != (werr == nil):
		t.Errorf("ScanPod.Pod error %v, DecodePod error %v for\n%q", serr, werr, raw)
	case serr == nil && !reflect.DeepEqual(scanned, whole):
		t.Errorf("ScanPod.Pod and DecodePod differ for\n%q\nscanned: %+v\nwhole: %+v", raw, scanned.Pod, whole.Pod)
	}
	p := ScanPod(raw)
	if !p.fast {
		return
	}
	if !json.Valid(raw) {
		t.Errorf("ScanPod accepts malformed JSON:\n%q", raw)
	}
	in, ok := p.decodeMarks()
	switch {
	case ok && err != nil:
		t.Errorf("ScanPod's marks accept what sigs.k8s.io/json refuses (%v):\n%q", err, raw)
	case ok && !reflect.DeepEqual(in, slow):
		t.Errorf("ScanPod's marks decode\n%+v\nsigs.k8s.io/json\n%+v\nfor %q", in, slow, raw)
	}
}

// FuzzDecodeFast: on any input, decodeFast and ScanPod's marks either decline it or decode
// exactly what sigs.k8s.io/json decodes (and never accept what it refuses), and ScanPod then Pod
// gives what DecodePod gives.
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
