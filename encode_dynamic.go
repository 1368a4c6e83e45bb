package jsonrpc

// This file holds the direct encoder's part (encode_direct.go) that
// depends on what a value holds at run time: the type of what an
// interface holds, found by its type word or its itab and kept by the
// interface's plan, and a map's entries, copied out through reflect and
// sorted.

import (
	"reflect"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// An ifaceEntry is what the direct encoder knows of the first word of an
// interface, key, a type or an itab: the type word of an empty interface
// holding the same value (the key itself for a type), and the plan of
// that type, nil if it has none.
type ifaceEntry struct {
	key  unsafe.Pointer
	word unsafe.Pointer
	plan *encPlan
}

// ifaceEntries maps the first word of an interface that is not nil, a
// type or an itab, to its *ifaceEntry. Both are unsafe.Pointers the
// runtime never frees, and an itab's dynamic type never changes.
var ifaceEntries sync.Map

// ifaceEntryFor returns the entry of the first word of w, an interface of
// p's type that is not nil.
func (p *encPlan) ifaceEntryFor(w *[2]unsafe.Pointer) *ifaceEntry {
	if e, ok := ifaceEntries.Load(w[0]); ok {
		return e.(*ifaceEntry)
	}
	return p.newIfaceEntry(w)
}

// newIfaceEntry makes the entry of the first word of w: from the empty
// interface w is, or, for an interface with methods, from the one that
// reflection makes of a copy of its words (which escapes to the heap here
// alone).
func (p *encPlan) newIfaceEntry(w *[2]unsafe.Pointer) *ifaceEntry {
	var x any
	if p.itab {
		words := *w
		x = reflect.NewAt(p.typ, unsafe.Pointer(&words)).Elem().Interface()
	} else {
		x = *(*any)(unsafe.Pointer(w))
	}
	e := &ifaceEntry{
		key:  w[0],
		word: (*[2]unsafe.Pointer)(unsafe.Pointer(&x))[0],
		plan: encPlanFor(reflect.TypeOf(x)),
	}
	stored, _ := ifaceEntries.LoadOrStore(w[0], e)
	return stored.(*ifaceEntry)
}

// A mapEntry is a member of a map's object: its key, and the place of
// its value among those copied out.
type mapEntry struct {
	key string
	i   int
}

// mapValue returns the map m (the map itself, a pointer) of p's type as
// a reflect.Value, made from the interface that would hold m. Through it
// m leaks, as it must: appendMap copies the map's values into a pooled
// buffer on the heap, which must never point into a stack. So the values
// given to encodeDirect leak too (its callers' already did, through
// encoding/json), though what points to them, such as appendBoxed's
// data, does not.
func (p *encPlan) mapValue(m unsafe.Pointer) reflect.Value {
	var v any
	w := (*[2]unsafe.Pointer)(unsafe.Pointer(&v))
	w[0], w[1] = p.mapWord, m
	return reflect.ValueOf(v)
}

// A mapBuf holds the entries and the values of a map while it is
// written; the plan of the map's type keeps them in a pool.
type mapBuf struct {
	entries []mapEntry
	vals    reflect.Value // a settable slice of the map's element type
}

// maxPooledMap is the most bytes a pooled mapBuf keeps, its entries and
// its values together, as the package's other pools keep at most 64 KiB.
const maxPooledMap = 64 << 10

// appendMap appends the JSON object of the map m of p's type, which is
// not nil, as encoding/json writes it: its members sorted by key, bytewise.
// The keys and values are copied out first, the values into a slice
// where the plan of the element reads them.
func (p *encPlan) appendMap(b []byte, m unsafe.Pointer, html bool, depth int) ([]byte, bool) {
	mv := p.mapValue(m)
	n := mv.Len()
	if n == 0 {
		return append(b, "{}"...), true
	}
	mb, _ := p.mapBufs.Get().(*mapBuf)
	if mb == nil {
		mb = &mapBuf{vals: reflect.New(p.mapVals).Elem()}
	}
	if cap(mb.entries) < n {
		mb.entries = make([]mapEntry, n)
	}
	if mb.vals.Cap() < n {
		mb.vals.Grow(n)
	}
	entries := mb.entries[:n]
	mb.vals.SetLen(n)
	var it reflect.MapIter
	it.Reset(mv)
	i := 0
	for ; i < n && it.Next(); i++ {
		// A key of a type of string kind is a string to the bits.
		reflect.NewAt(p.mapKey, unsafe.Pointer(&entries[i].key)).Elem().SetIterKey(&it)
		entries[i].i = i
		mb.vals.Index(i).SetIterValue(&it)
	}
	entries = entries[:i]
	slices.SortFunc(entries, func(x, y mapEntry) int { return strings.Compare(x.key, y.key) })
	base := mb.vals.UnsafePointer()
	b = append(b, '{')
	ok := true
	for j := range entries {
		if j > 0 {
			b = append(b, ',')
		}
		b = appendMarshaledString(b, entries[j].key, html)
		b = append(b, ':')
		if b, ok = p.elem.append(b, unsafe.Add(base, uintptr(entries[j].i)*p.size), html, depth+1); !ok {
			break
		}
	}
	// What the buffer held must not be kept alive by the pool.
	clear(entries)
	mb.vals.Clear()
	mb.vals.SetLen(0)
	if uintptr(cap(mb.entries))*unsafe.Sizeof(mapEntry{})+uintptr(mb.vals.Cap())*p.size <= maxPooledMap {
		p.mapBufs.Put(mb)
	}
	if !ok {
		return nil, false
	}
	return append(b, '}'), true
}
