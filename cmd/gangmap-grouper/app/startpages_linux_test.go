package app

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
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

// TestBinaryMappingsKeepsPrivatePages: a read-only mapping of the executable whose private
// (copied, written) pages are out of memory is not released either: a page the dynamic loader
// relocated (a PIE's .data.rel.ro, read-only after RELRO) or a debugger wrote, once swapped out,
// counts under Swap, not Anonymous, and MADV_DONTNEED would drop its swap entry, so that the next
// touch maps the file's unrelocated bytes. Neither is a mapping whose smaps entry does not say how
// many anonymous pages it holds (a kernel that does not report them).
func TestBinaryMappingsKeepsPrivatePages(t *testing.T) {
	smaps := []byte(`00400000-01dbe000 r-xp 00000000 00:2a 123 /bin/grouper
Rss:               21800 kB
Anonymous:             0 kB
Swap:                  0 kB
01dbe000-01dc0000 r--p 019be000 00:2a 123 /bin/grouper
Rss:                   0 kB
Anonymous:             0 kB
Swap:                  8 kB
01dc0000-01dc2000 r--p 019c0000 00:2a 123 /bin/grouper
Rss:                   8 kB
Swap:                  0 kB
`)
	got := binaryMappings(smaps, "/bin/grouper")
	want := []mapping{{start: 0x400000, end: 0x1dbe000, rss: 21800 << 10}}
	if len(got) != len(want) || got[0] != want[0] {
		t.Errorf("binaryMappings = %+v, want %+v", got, want)
	}
}

// mapFile maps the file at path read-only and private, as the kernel maps an executable's text.
func mapFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}

// smapsOf returns binaryMappings of the process's mappings of the file name.
func smapsOf(t *testing.T, name string) []mapping {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	return binaryMappings(smaps, name)
}

// TestReleaseKeepsWrittenPages, on real mappings: a read-only private file mapping into which a
// debugger wrote (a breakpoint: written through /proc/<pid>/mem as ptrace does, which copies the
// page) is not released, and its written byte stays; and a mapping whose file was replaced on
// disk while mapped (an image upgrade at the same path) is released and re-faults the bytes of
// the file it mapped, not of the new one.
func TestReleaseKeepsWrittenPages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "grouper")
	page := os.Getpagesize()
	content := bytes.Repeat([]byte{0xAA}, 4*page)
	if err := os.WriteFile(path, content, 0o755); err != nil {
		t.Fatal(err)
	}
	b := mapFile(t, path)
	_ = b[0] + b[3*page] // touch
	if got := smapsOf(t, path); len(got) != 1 {
		t.Fatalf("before the write: %+v, want the one clean mapping", got)
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no /proc/self/mem to write as a debugger: %v", err)
	}
	defer mem.Close()
	if _, err := mem.WriteAt([]byte{0xCC}, int64(uintptr(unsafe.Pointer(&b[page])))); err != nil {
		t.Skipf("cannot write as a debugger: %v", err)
	}
	if got := smapsOf(t, path); len(got) != 0 {
		t.Errorf("after a debugger's write: %+v, want none (the mapping holds a private page)", got)
	}
	if b[page] != 0xCC {
		t.Errorf("written byte = %#x, want 0xcc", b[page])
	}

	// Replaced on disk: a new file renamed over the path; the mapping keeps the old inode.
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, content, 0o755); err != nil {
		t.Fatal(err)
	}
	m := mapFile(t, old)
	_ = m[0]
	next := filepath.Join(dir, "next")
	if err := os.WriteFile(next, bytes.Repeat([]byte{0x55}, 4*page), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, old); err != nil {
		t.Fatal(err)
	}
	got := smapsOf(t, old+" (deleted)")
	if len(got) != 1 {
		t.Fatalf("replaced file: %+v, want its one mapping, named as /proc/self/exe names it then", got)
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, got[0].start, got[0].end-got[0].start, syscall.MADV_DONTNEED); errno != 0 {
		t.Fatal(errno)
	}
	if !bytes.Equal(m, content) {
		t.Errorf("after the release the mapping reads %#x..., want the replaced file's 0xaa", m[0])
	}
}
