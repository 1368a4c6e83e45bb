package jsonrpc

// This file holds Method and StreamMethod, which name a method with its
// types for both sides: the handler a Mux registers and the calls a
// Caller makes.

import (
	"context"
	"encoding"
	"encoding/json"
	"iter"
	"reflect"
	"strings"
)

// A Method names a method together with the types of its params and
// result, so that one value, shared by the two ends, both registers the
// handler and makes the calls, and the compiler checks both:
//
//	var Subtract = jsonrpc.NewMethod[[2]int, int]("subtract")
//
//	Subtract.Register(mux, func(ctx context.Context, p [2]int) (int, error) { return p[0] - p[1], nil })
//	diff, err := Subtract.Call(ctx, conn, [2]int{42, 23})
//
// The zero Method has no name and cannot be used; make one with
// [NewMethod].
type Method[P, R any] struct {
	name string
	opts []ParamsOption
}

// NewMethod returns the Method called name with params of type P and a
// result of type R. opts are given to [Func] when the handler is
// registered. NewMethod panics if name is empty or starts with "rpc."
// (reserved by the specification), or if P is a type that cannot encode
// as a JSON object or array, which the specification requires of params:
// a number, a string, a bool, a []byte (which encodes as a string), or a
// type whose MarshalText makes it a string. Structs, maps, slices,
// arrays, pointers to them, interfaces and types with their own
// MarshalJSON are accepted (a MarshalJSON declared on *T counts for a
// P of *T, not of T, as encoding/json sees it).
func NewMethod[P, R any](name string, opts ...ParamsOption) Method[P, R] {
	checkMethod[P](name)
	return Method[P, R]{name: name, opts: opts}
}

// Name returns the method's name.
func (m Method[P, R]) Name() string { return m.name }

// Register registers fn on mux as the handler of the method, adapted by
// [Func]. It panics as [Mux.Handle] does.
func (m Method[P, R]) Register(mux *Mux, fn func(ctx context.Context, params P) (R, error)) {
	mux.Handle(m.name, Func(fn, m.opts...))
}

// Call calls the method through c and returns its result, decoded as
// c's Call decodes it.
func (m Method[P, R]) Call(ctx context.Context, c Caller, params P) (R, error) {
	var r R
	err := c.Call(ctx, m.name, params, &r)
	return r, err
}

// Notify sends the method as a notification through c.
func (m Method[P, R]) Notify(ctx context.Context, c Caller, params P) error {
	return c.Notify(ctx, m.name, params)
}

// A StreamMethod names a streaming method (see [Stream]) together with the
// types of its params and items, as a [Method] does for a plain one. Make
// one with [NewStreamMethod].
type StreamMethod[P, T any] struct {
	name string
	opts []ParamsOption
}

// NewStreamMethod returns the StreamMethod called name with params of
// type P and items of type T. It panics as [NewMethod] does.
func NewStreamMethod[P, T any](name string, opts ...ParamsOption) StreamMethod[P, T] {
	checkMethod[P](name)
	return StreamMethod[P, T]{name: name, opts: opts}
}

// Name returns the method's name.
func (m StreamMethod[P, T]) Name() string { return m.name }

// Register registers fn on mux as the handler of the method, adapted by
// [Stream]. It panics as [Mux.Handle] does.
func (m StreamMethod[P, T]) Register(mux *Mux, fn func(ctx context.Context, params P) iter.Seq2[T, error]) {
	mux.Handle(m.name, Stream(fn, m.opts...))
}

// Call calls the method through c and yields its items, each decoded
// into a T by the rules of [Conn.Call]; an item that does not decode ends
// the sequence with its error, and the call is cancelled. As with c's
// Stream, the last pair carries the call's error, the sequence is
// single-use, and stopping the range early cancels the call.
func (m StreamMethod[P, T]) Call(ctx context.Context, c Caller, params P) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for raw, err := range c.Stream(ctx, m.name, params) {
			var item T
			if err == nil {
				err = sent(decodeUnscannedResult(raw, &item)) // an item came: it ran
			}
			if !yield(item, err) || err != nil {
				return
			}
		}
	}
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// checkMethod panics if name cannot name a method or P cannot be params.
// P is judged as encoding/json encodes params, a value held by an
// interface: by its MarshalJSON if it has one, else by its MarshalText
// (as a string), else by its kind. A method declared on the pointer
// counts for a pointer P, not for a value, which is not addressable; it
// counts for the elements of a slice, which are.
func checkMethod[P any](name string) {
	switch {
	case name == "":
		panic("jsonrpc: NewMethod: empty method name")
	case strings.HasPrefix(name, "rpc."):
		panic("jsonrpc: NewMethod: method names starting with \"rpc.\" are reserved: " + name)
	}
	t := reflect.TypeFor[P]()
	for t.Kind() == reflect.Pointer && !t.Implements(marshalerType) && !t.Implements(textMarshalerType) {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Interface:
		return // what it holds decides
	case t.Implements(marshalerType):
		return // it says itself what it encodes as
	case t.Implements(textMarshalerType):
		// a string
	default:
		switch t.Kind() {
		case reflect.Struct, reflect.Map, reflect.Array:
			return
		case reflect.Slice:
			e := reflect.PointerTo(t.Elem())
			if t.Elem().Kind() != reflect.Uint8 || e.Implements(marshalerType) || e.Implements(textMarshalerType) {
				return
			}
		}
	}
	panic("jsonrpc: NewMethod: params of " + name + " must encode as a JSON object or array, not " + t.String())
}
