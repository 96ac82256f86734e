package app

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileDisaggregatedSet is the LWS repo's DisaggregatedSet sample (one role) with a role name
// carrying terminal control sequences: an SGR colour, an OSC window title ended by BEL, a C1 CSI
// (U+009B) and a carriage return. The catalog's definition takes instance ids (the INSTANCE
// column) from spec.roles[].name as written.
const hostileDisaggregatedSet = `apiVersion: disaggregatedset.x-k8s.io/v1
kind: DisaggregatedSet
metadata:
  name: hostile
  namespace: team-a
spec:
  slices: 1
  roles:
    - name: "pre\u001b[31mRED\u001b]0;pwned\u0007\u009b2J\rfill"
      spec:
        replicas: 1
        leaderWorkerTemplate:
          size: 1
          workerTemplate:
            spec:
              containers: [{name: w, image: nginx}]
`

// TestPlanTextEscapesTerminalControls: a workload's author cannot drive the terminal of whoever
// runs gangmap on the workload: the control characters of the role name are printed as escapes.
// Before the fix the INSTANCE column carried the raw ESC, BEL, CSI and CR bytes.
func TestPlanTextEscapesTerminalControls(t *testing.T) {
	f := filepath.Join(t.TempDir(), "hostile.yaml")
	require.NoError(t, os.WriteFile(f, []byte(hostileDisaggregatedSet), 0o600))
	r := gangmap(t, "plan", "-f", f)
	require.Equal(t, ExitOK, r.code, "stderr: %s", r.stderr)
	for _, c := range []string{"\x1b", "\x07", "\u009b", "\r"} {
		assert.NotContains(t, r.stdout, c)
	}
	assert.Contains(t, r.stdout, `pre\x1b[31mRED\x1b]0;pwned\x07\u009b2J\rfill`)
}

// TestControlEscaper: C0 controls but newline and tab, DEL and C1 controls are escaped, also a
// C1 control split between two writes; other UTF-8 text passes unchanged.
func TestControlEscaper(t *testing.T) {
	var buf bytes.Buffer
	e := &controlEscaper{w: &buf}
	for _, s := range []string{"a\tb\n\x1b[0m\x7f", "é→\xc2", "\x9b", "ok\xc2", "\xa9", "end\xc2"} {
		n, err := e.Write([]byte(s))
		require.NoError(t, err)
		assert.Equal(t, len(s), n)
	}
	e.flush()
	assert.Equal(t, "a\tb\n\\x1b[0m\\x7fé→\\u009bok©end\xc2", buf.String())
}
