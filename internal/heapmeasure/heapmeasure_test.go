package heapmeasure

import "testing"

var kept [][]byte

// A reachable 64 MiB allocation shows in Live's difference; once let go it does not.
func TestLiveSeesWhatIsKept(t *testing.T) {
	before := Live()
	kept = append(kept, make([]byte, 64<<20))
	held := Live()
	if grew := int64(held) - int64(before); grew < 60<<20 || grew > 70<<20 {
		t.Fatalf("live heap grew %d bytes for a 64 MiB slice kept", grew)
	}
	kept = nil
	if freed := int64(held) - int64(Live()); freed < 60<<20 {
		t.Fatalf("live heap fell %d bytes once the 64 MiB slice was let go", freed)
	}
}
