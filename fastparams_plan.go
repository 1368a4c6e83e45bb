package jsonrpc

// This file holds how the direct decoder of params (fastparams.go) makes
// the decoder of a type: once per type, cached, from encoding/json's
// rules for the type's fields; a type it does not take, or one made of
// such types, gets none.

import (
	"reflect"
)

// directFor returns the decoder of t, or nil if the direct decoder does
// not take t.
func directFor(t reflect.Type) *direct {
	if d, ok := directs.Load(t); ok {
		return d.(*direct)
	}
	directsMu.Lock()
	defer directsMu.Unlock()
	if d, ok := directs.Load(t); ok {
		return d.(*direct)
	}
	b := directBuilder{built: make(map[reflect.Type]*direct)}
	d := b.build(t)
	if b.failed {
		d = nil
	}
	directs.Store(t, d)
	return d
}

// directBuilder builds the decoder of a type and of the types in it; if
// any of them is not taken, neither is the whole.
type directBuilder struct {
	built  map[reflect.Type]*direct
	failed bool
}

func (b *directBuilder) build(t reflect.Type) *direct {
	if b.failed {
		return nil
	}
	if d, ok := b.built[t]; ok {
		return d // t contains itself; d is being built
	}
	if t == rawMessage {
		return &direct{kind: dirRaw, typ: t}
	}
	if decodesItself(t) || t.Kind() == reflect.String && t.PkgPath() == "encoding/json" && t.Name() == "Number" {
		b.failed = true
		return nil
	}
	d := &direct{typ: t}
	b.built[t] = d
	switch k := t.Kind(); k {
	case reflect.Bool:
		d.kind = dirBool
	case reflect.Float32:
		d.kind = dirFloat32
	case reflect.Float64:
		d.kind = dirFloat64
	case reflect.String:
		d.kind = dirString
	case reflect.Pointer:
		d.kind = dirPointer
		d.elem = b.build(t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			b.failed = true // base64 from a string; and [N]byte is rare
			return nil
		}
		d.kind, d.size, d.n = dirSlice, t.Elem().Size(), 0
		if k == reflect.Array {
			d.kind, d.n = dirArray, t.Len()
		}
		d.elem = b.build(t.Elem())
	case reflect.Map:
		kt := t.Key()
		if reflect.PointerTo(kt).Implements(textUnm) {
			b.failed = true
			return nil
		}
		ik, integer := integerKind(kt.Kind())
		switch {
		case kt.Kind() == reflect.String:
			d.key = dirString
		case integer:
			d.key = ik
		default:
			b.failed = true
			return nil
		}
		d.kind = dirMap
		d.elem = b.build(t.Elem())
	case reflect.Struct:
		d.kind = dirStruct
		fields, plain := jsonFields(t)
		if !plain || len(fields) > 64 {
			b.failed = true // more than the bits of a mask
			return nil
		}
		for _, f := range fields {
			if f.viaPointer || f.quoted {
				b.failed = true
				return nil
			}
			d.fields = append(d.fields, directField{name: f.name, offset: f.offset(t), dec: b.build(f.typ)})
		}
		if len(d.fields) > maxLinearFields {
			d.byName = make(map[string]int, len(d.fields))
			for i, f := range d.fields {
				d.byName[f.name] = i
			}
		}
	case reflect.Interface:
		if t.NumMethod() != 0 {
			b.failed = true // encoding/json can decode only into what it points to
			return nil
		}
		d.kind = dirAny
	default:
		ik, ok := integerKind(k)
		if !ok { // what encoding/json cannot decode
			b.failed = true
			return nil
		}
		d.kind = ik
	}
	return d
}

// integerKind returns the kind of the direct decoder for an integer of
// kind k, and whether k is one.
func integerKind(k reflect.Kind) (directKind, bool) {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return dirInt + directKind(k-reflect.Int), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return dirUint + directKind(k-reflect.Uint), true
	}
	return 0, false
}
