package app

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseBinaryPages tells the kernel the process no longer needs the pages of its read-only
// mappings of its own executable (text, read-only data, pclntab): madvise(MADV_DONTNEED), which
// unmaps them from the process. Nothing is lost: a read-only private file mapping holds the
// file's bytes, which stay in the page cache, and the next touch of a page maps it again (a
// minor fault, 64 KiB at a time). The writable mapping (.data, .bss) and anything else is left
// alone, and so is a read-only mapping with anonymous (private, copied) pages, e.g. a debugger's
// breakpoints. It returns the resident bytes of the mappings released, read from
// /proc/self/smaps just before.
func releaseBinaryPages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var released int64
	for _, m := range binaryMappings(smaps, exe) {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
			return released, fmt.Errorf("madvise %x-%x: %w", m.start, m.end, errno)
		}
		released += m.rss
	}
	return released, nil
}

// mapping is one read-only mapping of the executable: its address range and resident bytes.
type mapping struct {
	start, end uintptr
	rss        int64
}

// binaryMappings parses /proc/self/smaps and returns the mappings of the file exe that are
// readable, not writable, and hold no private page: their entry says "Anonymous: 0 kB" (no
// copied page in memory) and, when it has a Swap line, "Swap: 0 kB" (none swapped out either:
// a relocated or debugger-written page out of memory counts there, and MADV_DONTNEED would drop
// it). An entry that does not say is left alone.
func binaryMappings(smaps []byte, exe string) []mapping {
	var out []mapping
	var cur *mapping
	// private is the private pages' kB the entry reported (anonymous and swapped); counted says
	// it reported its anonymous pages.
	var private int64
	var counted bool
	flush := func() {
		if cur != nil && counted && private == 0 {
			out = append(out, *cur)
		}
		cur, private, counted = nil, 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") {
			// A mapping's header: start-end perms offset dev inode [path].
			flush()
			if len(f) >= 6 && strings.Join(f[5:], " ") == exe && strings.HasPrefix(f[1], "r") && f[1][1] != 'w' {
				cur = parseRange(f[0])
			}
			continue
		}
		if cur == nil || len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			cur.rss = kb << 10
		case "Anonymous:":
			private, counted = private+kb, true
		case "Swap:":
			private += kb
		}
	}
	flush()
	return out
}

// parseRange parses "start-end" (hex), nil if malformed.
func parseRange(s string) *mapping {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return nil
	}
	a, err1 := strconv.ParseUint(lo, 16, 64)
	z, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || z <= a {
		return nil
	}
	return &mapping{start: uintptr(a), end: uintptr(z)}
}
