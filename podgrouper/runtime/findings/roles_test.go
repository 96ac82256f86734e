package findings

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRoleSetFindsEveryRole adds roles past smallRoles (the set switches to an index), filters
// them back under it (a list again), and finds each role that stays, with its counters, and
// none that went.
func TestRoleSetFindsEveryRole(t *testing.T) {
	var s roleSet
	for i := range 20 {
		name := fmt.Sprint("r", i)
		require.Nil(t, s.get(name))
		s.add(name).created = int32(i)
	}
	require.NotNil(t, s.index, "indexed past smallRoles")
	for i := range 20 {
		require.Equal(t, int32(i), s.get(fmt.Sprint("r", i)).created)
	}
	s.filter(func(rs *roleState) bool { rs.live = 1; return rs.created%2 == 0 })
	require.Len(t, s.list, 10)
	require.NotNil(t, s.index)
	for i := range 20 {
		rs := s.get(fmt.Sprint("r", i))
		if i%2 == 1 {
			require.Nil(t, rs, "r%d went", i)
			continue
		}
		require.Equal(t, int32(i), rs.created)
		require.Equal(t, int32(1), rs.live, "changed by filter")
	}
	s.filter(func(rs *roleState) bool { return rs.created < 6 })
	require.Nil(t, s.index, "a list again")
	require.Equal(t, []string{"r0", "r2", "r4"}, []string{s.list[0].name, s.list[1].name, s.list[2].name})
	require.Equal(t, int32(4), s.get("r4").created)
	require.Nil(t, s.get("r6"))
	s.add("r6").created = 60
	require.Equal(t, int32(60), s.get("r6").created)
}
