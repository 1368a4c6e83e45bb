package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// A Mux is a Handler that dispatches each request to the handler
// registered for its method, in the spirit of http.ServeMux. A method with
// no handler is answered with [ErrMethodNotFound].
//
// The zero Mux is empty and ready to use. A Mux is safe for concurrent
// use: methods may be registered while it serves.
type Mux struct {
	mu       sync.Mutex                         // serialises Handle and Use
	raw      map[string]Handler                 // as registered; guarded by mu
	mw       []func(Handler) Handler            // guarded by mu
	handlers atomic.Pointer[map[string]Handler] // wrapped; replaced, never changed
	notFound atomic.Pointer[Handler]            // the middleware around ErrMethodNotFound; nil without middleware
}

// methodNotFound answers every request with ErrMethodNotFound.
var methodNotFound Handler = HandlerFunc(func(context.Context, *Request) (any, error) {
	return nil, ErrMethodNotFound
})

// missing returns the handler of a method with no handler of its own: nil
// when there is no middleware, so that the answer is ErrMethodNotFound at
// once, or else the middleware around that answer.
func (m *Mux) missing() Handler {
	if m == nil {
		return nil
	}
	if h := m.notFound.Load(); h != nil {
		return *h
	}
	return nil
}

var _ Handler = (*Mux)(nil)

// Handle registers h for method. It panics if method is empty, is not
// valid UTF-8 (no request could name it: JSON text is UTF-8) or starts
// with "rpc." (which the specification reserves), if h is nil, or if
// method already has a handler: each is a programming error.
func (m *Mux) Handle(method string, h Handler) {
	switch {
	case method == "":
		panic("jsonrpc: Mux.Handle: empty method name")
	case !utf8.ValidString(method):
		panic(fmt.Sprintf("jsonrpc: Mux.Handle: method name is not valid UTF-8: %q", method))
	case strings.HasPrefix(method, "rpc."):
		panic("jsonrpc: Mux.Handle: method names starting with \"rpc.\" are reserved: " + method)
	case h == nil:
		panic("jsonrpc: Mux.Handle: nil handler for " + method)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.raw[method]; dup {
		panic("jsonrpc: Mux.Handle: method registered twice: " + method)
	}
	if m.raw == nil {
		m.raw = make(map[string]Handler)
	}
	m.raw[method] = h
	var next map[string]Handler
	if old := m.handlers.Load(); old != nil {
		next = maps.Clone(*old)
	} else {
		next = make(map[string]Handler)
	}
	next[method] = m.wrap(h)
	m.handlers.Store(&next)
}

// Use adds middleware that wraps the handler of every method, those
// registered already and those registered later; the first added is the
// outermost. Each handler is wrapped once, when it is registered or Use is
// called, not on every request, so a server keeps its fast path for a Mux.
// Requests for a method with no handler pass through the middleware too,
// around the answer [ErrMethodNotFound], so that middleware sees every
// request (to count or trace unknown methods, say); [Mux.Handler] still
// returns nil for them. Use panics on a nil middleware.
// Middleware runs while the Mux is locked: it must not call the Mux's
// Handle or Use.
//
// A middleware sees each request's id and method in req, and can reach
// them from any context derived from the handler's with
// [RequestFromContext].
func (m *Mux) Use(mw ...func(Handler) Handler) {
	for _, f := range mw {
		if f == nil {
			panic("jsonrpc: Mux.Use: nil middleware")
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mw = append(m.mw, mw...)
	next := make(map[string]Handler, len(m.raw))
	for method, h := range m.raw {
		next[method] = m.wrap(h)
	}
	m.handlers.Store(&next)
	nf := m.wrap(methodNotFound)
	m.notFound.Store(&nf)
}

// wrap applies the middleware to h; m.mu is held.
func (m *Mux) wrap(h Handler) Handler {
	for i := len(m.mw) - 1; i >= 0; i-- {
		h = m.mw[i](h)
	}
	return h
}

// HandleFunc registers the function f for method, as Handle does.
func (m *Mux) HandleFunc(method string, f func(ctx context.Context, req *Request) (any, error)) {
	if f == nil {
		panic("jsonrpc: Mux.HandleFunc: nil handler for " + method)
	}
	m.Handle(method, HandlerFunc(f))
}

// Handler returns the handler registered for method, wrapped in the
// middleware added with Use, or nil.
func (m *Mux) Handler(method string) Handler {
	if m == nil {
		return nil
	}
	if hs := m.handlers.Load(); hs != nil {
		return (*hs)[method]
	}
	return nil
}

// ServeJSONRPC calls the handler registered for req.Method, and returns
// [ErrMethodNotFound] if there is none. A nil *Mux has no methods.
func (m *Mux) ServeJSONRPC(ctx context.Context, req *Request) (any, error) {
	h := m.Handler(req.Method)
	if h == nil {
		if h = m.missing(); h == nil {
			return nil, ErrMethodNotFound
		}
		ctx = context.WithValue(ctx, noHandlerKey{}, true) // for NoHandler
	} else {
		ctx = handled(ctx) // an outer Mux's middleware may have passed it on
	}
	return h.ServeJSONRPC(ctx, req)
}

// Func adapts a typed function to a Handler. The request's params are
// decoded into a zero P with encoding/json: an object into a struct or a
// map, an array into a slice or an array type; absent params leave P zero.
// A decode failure is answered with CodeInvalidParams and a message that
// says what was wrong. The R that fn returns is encoded with encoding/json,
// except that a json.RawMessage is sent as it is.
//
// Params are decoded strictly, by the rules of encoding/json/v2 for member
// names: a name matches a field only exactly, so {"NAME":"x"} leaves a
// field tagged "name" alone, and {"name":"x"} one called Name without a
// tag (they are unknown members, and unknown members are ignored); and a
// name given twice in one object, at any depth, is answered with
// CodeInvalidParams and data that names it, such as {"reason":"duplicate
// member","member":"name","path":"/user/name"}, whose path is a JSON
// Pointer (RFC 6901) into the params. Two keys of a map that decode to
// one Go key, as encoding/json decodes them, are a duplicate too: "1" and
// "01" for an integer key, "::1" and "0::1" for a key type with
// UnmarshalText such as netip.Addr (or with UnmarshalJSON as well, which
// the default encoding/json calls instead, with the key as written).
// Duplicates are refused inside a json.RawMessage, an any or a type with
// its own UnmarshalJSON too, whose names are otherwise left to that type.
// A proxy or policy that reads the
// params before the handler therefore reads the same members as the
// handler. Nesting deeper than 10,000 levels is refused, as encoding/json
// refuses it. [LaxParams] restores the rules of encoding/json, which match
// names whatever their case and keep the last of a duplicate:
// Func(fn, LaxParams).
//
// Strict params of the common shapes (structs, slices, arrays, maps and
// pointers of numbers, strings, bools, empty interfaces and
// json.RawMessages, with encoding/json's rules for field names) are
// decoded without encoding/json, straight from the input the connection
// has checked, to the same value; anything else, and any params that
// would be refused, go through encoding/json, so the errors are its own.
// Results are written as encoding/json writes them; served on a
// connection, those of the common shapes (numbers, bools, and the
// structs, slices, arrays, maps and pointers the direct encoder takes)
// without encoding/json and without boxing R in an interface.
func Func[P, R any](fn func(ctx context.Context, params P) (R, error), opts ...ParamsOption) Handler {
	return &funcHandler[P, R]{fn: fn, rules: rulesFor(reflect.TypeFor[P](), opts), result: directPlan(reflect.TypeFor[R]())}
}

// funcHandler is the Handler that Func returns.
type funcHandler[P, R any] struct {
	fn       func(ctx context.Context, params P) (R, error)
	rules    nameRules
	decoders paramDecoders
	result   *encPlan // the direct encoder's plan for R, if it has one (see serveTo)
}

func (h *funcHandler[P, R]) ServeJSONRPC(ctx context.Context, req *Request) (any, error) {
	r, err := h.call(ctx, req, false)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// serveTo is ServeJSONRPC for a server: a result that appendScalar
// encodes is appended to b, and one that the direct encoder's plan for R
// writes, to the buffer of an encoder from es, returned as enc for the
// caller to give back once the bytes are written; neither is boxed in an
// interface. Any other comes back as v. The server passes req as it read
// it, so its params, if any, are a JSON object or array that the scanner
// validated.
func (h *funcHandler[P, R]) serveTo(ctx context.Context, req *Request, b []byte, es *encoders) (encoded []byte, enc *encoder, v any, err error) {
	r, err := h.call(ctx, req, true)
	if err != nil {
		return nil, nil, nil, err
	}
	if encoded, ok := appendScalar(b, r); ok {
		return encoded, nil, nil, nil
	}
	if h.result != nil {
		// r stays on this stack: the plan reads what it points to.
		e := es.get()
		if out, ok := h.result.append(e.scalar[:0], unsafe.Pointer(&r), false, 0); ok {
			e.scalar = out
			return out, e, nil, nil
		}
		es.put(e) // the plan gave up (a NaN, ...): encoding/json says why
	}
	return nil, nil, r, nil
}

// A typedHandler is a handler made by Func, which a server calls through
// serveTo rather than ServeJSONRPC.
type typedHandler interface {
	serveTo(ctx context.Context, req *Request, b []byte, es *encoders) (encoded []byte, enc *encoder, v any, err error)
}

// call decodes the params of req and calls fn; valid says that they are
// known to be a valid JSON object or array.
func (h *funcHandler[P, R]) call(ctx context.Context, req *Request, valid bool) (R, error) {
	if d := h.rules.direct; d != nil && valid && len(req.Params) > 0 {
		// What decode does first, here with p on the stack: passed to
		// decode as an interface, it escapes (an allocation a call).
		var p P
		if decodeDirect(req.Params, d, unsafe.Pointer(&p)) {
			return h.fn(ctx, p)
		}
		rules := h.rules
		rules.direct = nil // it gave up: not again
		return h.decodeAndCall(ctx, req, valid, rules)
	}
	return h.decodeAndCall(ctx, req, valid, h.rules)
}

// decodeAndCall is call for params that the direct decoder did not take,
// decoded by decode into a zero P.
func (h *funcHandler[P, R]) decodeAndCall(ctx context.Context, req *Request, valid bool, rules nameRules) (R, error) {
	var p P
	if err := h.decoders.decode(req.Params, &p, valid, rules); err != nil {
		var zero R
		return zero, err
	}
	return h.fn(ctx, p)
}

// decodeParams decodes params into p by rules, or returns an Invalid
// params error.
func decodeParams(params json.RawMessage, p any, rules nameRules) error {
	return (*paramDecoders)(nil).decode(params, p, false, rules)
}

// paramDecoders keeps json.Decoders for reuse by one adapter. Params that
// are one valid JSON object or array, and not too large, are decoded by a
// Decoder: it runs the same decoding as json.Unmarshal, and so gives the
// same value and the same errors, but keeps its decoding state from one
// call to the next, where json.Unmarshal allocates it afresh (four
// allocations for a small struct). A nil *paramDecoders uses
// json.Unmarshal.
type paramDecoders struct {
	pool sync.Pool // of *paramDecoder
}

// maxPooledParams is the size of the largest params decoded by a pooled
// Decoder, which keeps a buffer of about twice the largest input it read.
const maxPooledParams = 16 << 10

type paramDecoder struct {
	r     bytes.Reader
	dec   *json.Decoder
	fed   int64   // bytes given to dec in all
	check checker // for strict rules
}

// decode decodes params into p, or returns an Invalid params error. The
// member names of params are first checked by rules (see strict.go). A p
// that decodes itself is handed params directly: they are one valid JSON
// value already, which is all that encoding/json would check first. valid
// says that params are known to be a valid JSON object or array, which
// spares checking them again.
func (ds *paramDecoders) decode(params json.RawMessage, p any, valid bool, rules nameRules) error {
	if len(params) == 0 {
		return nil
	}
	if rules.direct != nil {
		// The direct decoder (fastparams.go) takes what it decodes exactly
		// as the strict check and encoding/json below would; what it
		// gives up on is decoded again from a zero value.
		if !valid {
			valid = validParams(params)
		}
		if v := reflect.ValueOf(p); valid && v.Type().Elem() == rules.direct.typ {
			if decodeDirect(params, rules.direct, v.UnsafePointer()) {
				return nil
			}
			v.Elem().SetZero()
		}
	}
	u, self := p.(json.Unmarshaler)
	var d *paramDecoder
	if !self && ds != nil && len(params) <= maxPooledParams && (valid || validParams(params)) {
		d, valid = ds.get(), true
	}
	if !rules.lax {
		var c *checker
		if d != nil {
			c = &d.check
		}
		checked, err := strictInput(params, rules.plan, valid, c)
		if err != nil {
			if d != nil {
				ds.pool.Put(d)
			}
			return err.invalidParams()
		}
		params = checked
	}
	var err error
	switch {
	case d != nil:
		err = ds.decodeWith(d, params, p)
	case self && (valid || validParams(params)):
		err = u.UnmarshalJSON(trimSpace(params)) // the value alone, as encoding/json hands it
	default:
		err = json.Unmarshal(params, p)
	}
	if err != nil {
		return Errorf(CodeInvalidParams, "Invalid params: %s", describeDecodeError(err, p))
	}
	return nil
}

// get returns a pooled Decoder, or a new one.
func (ds *paramDecoders) get() *paramDecoder {
	d, _ := ds.pool.Get().(*paramDecoder)
	if d == nil {
		d = new(paramDecoder)
		d.dec = json.NewDecoder(&d.r)
	}
	return d
}

// decodeValid decodes params, a valid JSON object or array, into p with a
// pooled Decoder. Valid input (our scanner is the stricter of the two: it
// also holds strings to valid UTF-8) leaves json.Unmarshal nothing to
// report but what decoding reports, and a Decoder reads the whole value
// and decodes it with the same code.
func (ds *paramDecoders) decodeValid(params json.RawMessage, p any) error {
	return ds.decodeWith(ds.get(), params, p)
}

// decodeWith is decodeValid with the Decoder d, taken from the pool. d
// goes back to the pool only if it consumed everything it was given, so
// that each one starts clean.
func (ds *paramDecoders) decodeWith(d *paramDecoder, params json.RawMessage, p any) error {
	d.r.Reset(params)
	d.fed += int64(len(params))
	err := d.dec.Decode(p)
	if d.r.Len() == 0 && d.dec.InputOffset() == d.fed {
		ds.pool.Put(d)
	}
	return err
}

// describeDecodeError says in a sentence what was wrong with the params.
func describeDecodeError(err error, p any) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.String()
		t := reflect.TypeOf(p).Elem()
		if te.Field != "" && (t.Kind() == reflect.Array || t.Kind() == reflect.Slice) && strings.Trim(te.Field, "0123456789.") == "" {
			// encoding/json on v2 (GOEXPERIMENT=jsonv2) names an
			// element of array params by its index, as a field.
			te.Field = ""
		}
		if te.Field != "" {
			return "field \"" + te.Field + "\" must be " + want + ", not a JSON " + te.Value
		}
		if te.Type != t {
			// Inside array params: one element, not the whole.
			return "an element must be " + want + ", not a JSON " + te.Value
		}
		return "want " + describeType(t) + ", not a JSON " + te.Value
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object (" + t.String() + ")"
	case reflect.Slice, reflect.Array:
		return "an array (" + t.String() + ")"
	}
	return t.String()
}

// Stream adapts a function that produces a sequence of items to a Handler.
// Its params are decoded as [Func] decodes them, strictly unless
// [LaxParams] is given.
//
// Served on a connection, each item goes out as a notification
// {"jsonrpc":"2.0","method":"$/stream","params":{"id":X,"item":V}} where X is
// the request's id, in order; then comes the one response to the
// request, whose result is the number of items. Items are written as
// [Peer]'s Notify writes notifications: yield returns once the item is in
// the connection's output, and while a peer slow to read leaves the
// output full, it waits for room (backpressure), until the request's
// context ends. A pair with a non-nil error ends
// the stream, and the error becomes the call's error response. When the
// request is cancelled or a write fails, yield returns false and the
// producer must stop. A notification to a stream method, whose items no
// one would take, runs the producer until its first item: yield returns
// false there (so a peer cannot make a producer run on for nothing).
//
// Called in process with [InProcess.Stream], the items reach the caller
// directly.
func Stream[P, T any](fn func(ctx context.Context, params P) iter.Seq2[T, error], opts ...ParamsOption) Handler {
	rules := rulesFor(reflect.TypeFor[P](), opts)
	return HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		var p P
		if err := decodeParams(req.Params, &p, rules); err != nil {
			return nil, err
		}
		s, _ := ctx.Value(senderKey{}).(sender)
		n := 0
		var failed error
		for v, err := range fn(ctx, p) {
			if err != nil {
				failed = err
				break
			}
			if s != nil {
				if err := s.emit(v); err != nil {
					if err != errNoTaker {
						failed = err
					}
					break
				}
			}
			if err := ctx.Err(); err != nil {
				failed = err
				break
			}
			n++
		}
		if failed != nil {
			return nil, failed
		}
		return n, nil
	})
}
