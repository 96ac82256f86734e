package strays

// Len is the number of indexed PodGroups.
func (x *OwnerIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.one)
	for _, byNS := range x.more {
		for _, byName := range byNS {
			n += len(byName)
		}
	}
	return n
}
