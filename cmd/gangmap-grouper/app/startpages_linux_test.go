package app

import (
	"os"
	"testing"
)

// TestReleaseBinaryPages: the test binary's read-only mappings are found (text and read-only
// data, with what the package initialisers made resident) and released: their resident set
// drops, and the process goes on running code from them.
func TestReleaseBinaryPages(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	resident := func() (int64, int) {
		smaps, err := os.ReadFile("/proc/self/smaps")
		if err != nil {
			t.Fatal(err)
		}
		var rss int64
		ms := binaryMappings(smaps, exe)
		for _, m := range ms {
			rss += m.rss
		}
		return rss, len(ms)
	}
	before, n := resident()
	if n < 2 || before < 1<<20 {
		t.Fatalf("want the text and read-only data mappings with over 1 MiB resident, got %d mappings, %d bytes", n, before)
	}
	released, err := releaseBinaryPages()
	if err != nil {
		t.Fatal(err)
	}
	if released < before/2 {
		t.Errorf("released %d bytes, want about the %d resident before", released, before)
	}
	after, _ := resident()
	if after >= before/2 {
		t.Errorf("resident after the release: %d bytes, want well under the %d before", after, before)
	}
}

// TestBinaryMappings: only readable, non-writable mappings of the executable without anonymous
// pages, with their resident bytes.
func TestBinaryMappings(t *testing.T) {
	smaps := []byte(`00400000-01dbe000 r-xp 00000000 00:2a 123 /bin/grouper
Size:              26360 kB
Rss:               21800 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
01dbe000-03a89000 r--p 019be000 00:2a 123 /bin/grouper
Rss:               21900 kB
Anonymous:             0 kB
03a89000-03b64000 rw-p 03689000 00:2a 123 /bin/grouper
Rss:                 800 kB
Anonymous:           200 kB
03b64000-03b70000 r--p 00000000 00:2a 124 /bin/grouper-other
Rss:                   8 kB
Anonymous:             0 kB
04000000-04001000 r-xp 00000000 00:2a 123 /bin/grouper
Rss:                   4 kB
Anonymous:             4 kB
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
Rss:                   4 kB
Anonymous:             4 kB
`)
	got := binaryMappings(smaps, "/bin/grouper")
	want := []mapping{{start: 0x400000, end: 0x1dbe000, rss: 21800 << 10}, {start: 0x1dbe000, end: 0x3a89000, rss: 21900 << 10}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("binaryMappings = %+v, want %+v", got, want)
	}
}
