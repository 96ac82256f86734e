package gang

// smallIndexSize is the number of entries up to which a smallIndex is a list.
const smallIndexSize = 8

// smallIndex maps keys to values as a Go map does: a list while it holds at most smallIndexSize
// entries, a map beyond. A plan has two (roles and PodGroups by key); most plans hold a few
// entries in each, which cost 40 to 48 bytes each in the list against about 380 bytes for the
// smallest Go map, while a plan of per-replica gangs or of many roles may hold thousands.
type smallIndex[K comparable, V any] struct {
	list []smallEntry[K, V]
	m    map[K]V
}

type smallEntry[K comparable, V any] struct {
	k K
	v V
}

// set maps k to v (replacing k's value).
func (x *smallIndex[K, V]) set(k K, v V) {
	if x.m != nil {
		x.m[k] = v
		return
	}
	for i := range x.list {
		if x.list[i].k == k {
			x.list[i].v = v
			return
		}
	}
	if len(x.list) < smallIndexSize {
		x.list = append(x.list, smallEntry[K, V]{k, v})
		return
	}
	x.m = make(map[K]V, len(x.list)+1)
	for _, e := range x.list {
		x.m[e.k] = e.v
	}
	x.m[k], x.list = v, nil
}

// get returns k's value (the zero value when there is none).
func (x *smallIndex[K, V]) get(k K) V {
	if x.m != nil {
		return x.m[k]
	}
	for i := range x.list {
		if x.list[i].k == k {
			return x.list[i].v
		}
	}
	var zero V
	return zero
}
