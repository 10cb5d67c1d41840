package cborwire

import (
	"slices"
	"strings"
)

// CompareKeys compares two text map keys in the order core deterministic
// encoding (RFC 8949 §4.2.1) puts them: bytewise by their encodings,
// which, the head holding the length, is shorter keys first, then byte
// order. It returns -1, 0 or +1, as strings.Compare does.
func CompareKeys(a, b string) int {
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return +1
	}
	return strings.Compare(a, b)
}

// sortInPlace is the size up to which SortKeys sorts by insertion: the
// maps of a record are small, and an insertion sort of a few keys, often
// nearly in order already, costs less than setting up a general sort.
const sortInPlace = 12

// SortKeys appends to order the indexes 0 to n-1 of a map's n keys,
// sorted by CompareKeys of key(i), and returns it. Of keys that are equal
// it keeps only the last index: a later duplicate wins, as it does in a Go
// map filled in order, so len of the result is the count of the map's
// head. With an order that has room for n (the slice of a caller's
// stack array, say), it allocates nothing.
func SortKeys(order []int, n int, key func(i int) string) []int {
	base := len(order)
	for i := range n {
		order = append(order, i)
	}
	o := order[base:]
	// Equal keys are ordered by index, so the last of a run is the one kept.
	less := func(i, j int) int {
		if c := CompareKeys(key(i), key(j)); c != 0 {
			return c
		}
		return i - j
	}
	if n <= sortInPlace {
		for i := 1; i < n; i++ {
			for j := i; j > 0 && less(o[j-1], o[j]) > 0; j-- {
				o[j-1], o[j] = o[j], o[j-1]
			}
		}
	} else {
		slices.SortFunc(o, less)
	}
	// Drop every index whose key the next one repeats.
	kept := 0
	for i, x := range o {
		if i+1 < len(o) && key(o[i+1]) == key(x) {
			continue
		}
		o[kept] = x
		kept++
	}
	return order[:base+kept]
}
