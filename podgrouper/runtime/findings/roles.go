package findings

// smallRoles is the number of roles a workload keeps in a plain list; past it, an index by name
// finds a role (a workload's roles are its definition's and its object's data: an author may
// write thousands).
const smallRoles = 8

// roleSet is a workload's roles by name: a list in the order they came (two roles cost about
// 200 bytes in a slice against 450 as a Go map of pointers), with an index by name once it holds
// more than smallRoles. A *roleState is valid until the next add or filter.
type roleSet struct {
	list  []roleState
	index map[string]int
}

// get returns the role (nil when there is none).
func (s *roleSet) get(name string) *roleState {
	if s.index != nil {
		if i, ok := s.index[name]; ok {
			return &s.list[i]
		}
		return nil
	}
	for i := range s.list {
		if s.list[i].name == name {
			return &s.list[i]
		}
	}
	return nil
}

// add appends a role with no plan and no pods (its name is not in the set).
func (s *roleSet) add(name string) *roleState {
	s.list = append(s.list, roleState{name: name})
	i := len(s.list) - 1
	switch {
	case s.index != nil:
		s.index[name] = i
	case len(s.list) > smallRoles:
		s.reindex()
	}
	return &s.list[i]
}

// filter keeps the roles for which keep (which may change them) returns true, in order.
func (s *roleSet) filter(keep func(*roleState) bool) {
	out := s.list[:0]
	for i := range s.list {
		if keep(&s.list[i]) {
			out = append(out, s.list[i])
		}
	}
	clear(s.list[len(out):])
	s.list, s.index = out, nil
	if len(out) > smallRoles {
		s.reindex()
	}
}

func (s *roleSet) reindex() {
	s.index = make(map[string]int, len(s.list))
	for i := range s.list {
		s.index[s.list[i].name] = i
	}
}
