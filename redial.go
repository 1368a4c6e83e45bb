package jsonrpc

// This file holds Redialer, a Caller that makes its connection again when
// it breaks.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"
)

// A Redialer is a [Caller] over a connection that it makes when first
// needed and makes again whenever it breaks: a socket to a backend that
// restarts, a balancer that resets connections, a child process that
// exits (a [Process] started in Dial waits for its child once its
// connection ends; see the example). Calls made while it reconnects wait
// for the new connection within their context.
//
// A call that fails because its connection broke is made again on the
// next connection when it surely did not run (see [MayHaveRun]), or when
// Retry says its method is safe to repeat (MaxRetries times at most);
// otherwise its error is returned, and wraps [ErrClosed]. A call answered [ErrNotRun] (the peer
// is stopping) is made again on a new connection, and the one it was
// answered on is shut down. A Stream whose connection breaks ends with
// such an error and is not made again, nor is a Batch.
//
// Failed dials are retried after a wait that doubles from MinBackoff to
// MaxBackoff, each drawn at random between half and all of its bound, so
// that many clients of one restarted server do not return at once. So
// are connections that are let go one after another without a call
// answered between them (a peer that accepts connections and then closes
// them, or answers every call ErrNotRun): the first is replaced at once,
// the next ones after those waits.
//
// Dial and the other fields must be set before the first call and not
// changed after. A Redialer is safe for concurrent use; Close ends it.
type Redialer struct {
	// Dial makes a new connection, such as
	//
	//	func(ctx context.Context) (*jsonrpc.Conn, error) {
	//		return jsonrpc.Dial(ctx, "tcp", addr, opts)
	//	}
	//
	// Its ctx ends when the Redialer is closed, not before: what the
	// connection needs for its lifetime may use it, as a child process
	// started with [StartProcess] does (see the example). Dial should
	// return soon after ctx ends: calls waiting for a connection fail at
	// Close whatever it does, but Close itself returns only once it has.
	Dial func(ctx context.Context) (*Conn, error)

	// OnConnect, if set, runs on each new connection before any call goes
	// through it, to initialize a session or subscribe again. An error
	// closes that connection and counts as a failed dial.
	OnConnect func(ctx context.Context, c *Conn) error

	// Retry, if set, reports whether a call of method may be made again
	// after its connection broke once it was sent: whether the method is
	// idempotent. Calls that surely did not run are made again whatever it
	// says.
	Retry func(method string) bool

	// MaxRetries bounds how many times a call that may have run is made
	// again because Retry allows it, so that a request that breaks every
	// connection it is sent on is not resent for as long as its ctx
	// lasts; zero means 4 (five attempts in all), a negative value none.
	// Attempts that surely did not run are not counted: they are made
	// again within ctx.
	MaxRetries int

	// MinBackoff and MaxBackoff bound the wait between failed dials;
	// zero means 50 ms and 5 s.
	MinBackoff, MaxBackoff time.Duration

	mu      sync.Mutex
	conn    *Conn
	dialing chan struct{} // closed when the dial under way ends
	dialErr error         // why the last dial failed
	closed  bool
	closing chan struct{}      // closed by Close; made with the first wait for a dial
	ctx     context.Context    // Dial's, until Close
	stop    context.CancelFunc // ends ctx
	wg      sync.WaitGroup     // the dialing goroutine, and those that end connections let go
	lost    atomic.Int32       // connections let go in a row, without a call answered between
}

// errRedialerClosed is why a call to a closed Redialer fails.
var errRedialerClosed = &closedError{cause: errors.New("jsonrpc: Redialer closed")}

// connFor returns the current connection, waiting within ctx while a new
// one is made.
func (r *Redialer) connFor(ctx context.Context) (*Conn, error) {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, errRedialerClosed
		}
		if c := r.conn; c != nil {
			select {
			case <-c.Done():
				r.letGo(c, false) // broken: make another
			default:
				r.mu.Unlock()
				return c, nil
			}
		}
		if r.dialing == nil {
			r.startDial()
		}
		dialing := r.dialing
		if r.closing == nil {
			r.closing = make(chan struct{})
		}
		closing := r.closing
		r.mu.Unlock()
		select {
		case <-dialing:
		case <-closing: // even while a Dial that ignores its ctx runs on
			return nil, errRedialerClosed
		case <-ctx.Done():
			r.mu.Lock()
			dialErr := r.dialErr
			r.mu.Unlock()
			if dialErr != nil {
				// Nothing was sent: what dialErr wraps (the peer's answer
				// to a call of OnConnect's, a call of Dial's that went
				// out) says nothing of this call (see MayHaveRun).
				return nil, &refusedError{err: fmt.Errorf("%w; the last dial failed: %w", ctx.Err(), dialErr)}
			}
			return nil, ctx.Err()
		}
	}
}

// startDial starts the goroutine that makes the next connection. r.mu is
// held.
func (r *Redialer) startDial() {
	if r.ctx == nil {
		r.ctx, r.stop = context.WithCancel(context.Background())
	}
	ctx := r.ctx
	done := make(chan struct{})
	r.dialing = done
	r.wg.Go(func() {
		c := r.dialLoop(ctx)
		r.mu.Lock()
		if c != nil && r.closed {
			r.mu.Unlock()
			_ = c.Close()
			c.waitProcess() // Close waits for r.wg, this goroutine among it
			r.mu.Lock()
			c = nil
		}
		r.conn, r.dialing = c, nil
		close(done)
		r.mu.Unlock()
	})
}

// dialLoop dials until a connection is made and set up, or ctx ends.
// After the first connection let go in a row (see retire), it dials at
// once; after more, it waits as after as many failed dials, so that a
// peer that accepts connections and serves nothing is not dialed in a
// tight loop.
func (r *Redialer) dialLoop(ctx context.Context) *Conn {
	b := newBackoff(r.MinBackoff, r.MaxBackoff)
	if lost := int(r.lost.Load()); lost > 1 {
		var wait time.Duration
		for range min(lost-1, 32) {
			wait = b.next()
		}
		if !sleep(ctx, wait) {
			return nil
		}
	}
	for {
		c, err := r.Dial(ctx)
		if err == nil && r.OnConnect != nil {
			if err = r.OnConnect(ctx, c); err != nil {
				_ = c.Close()
				c.waitProcess()
			}
		}
		if err == nil {
			r.mu.Lock()
			r.dialErr = nil
			r.mu.Unlock()
			return c
		}
		r.mu.Lock()
		r.dialErr = err
		r.mu.Unlock()
		if !sleep(ctx, b.next()) {
			return nil
		}
	}
}

// again reports whether a call of method, or a notification if call is
// false, that failed with err on c is to be made again on a new
// connection: if it surely did not run, or if it is a call that Retry
// allows, or if the peer answered [ErrNotRun] (it is stopping). Whenever
// it reports true, observe has let c go.
func (r *Redialer) again(c *Conn, method string, call bool, err error) bool {
	if !r.observe(c, call, err) {
		return false
	}
	return errors.Is(err, ErrNotRun) || !MayHaveRun(err) || (call && r.Retry != nil && r.Retry(method))
}

// observe notes what err, the outcome of a call on c (a notification if
// call is false), shows of c, and reports whether c failed it. An answer
// (a result, or an error from the peer) shows that c works. A peer that
// answers [ErrNotRun] is stopping: c is let go, shut down gracefully. An
// error wrapping [ErrClosed] lets c go too, even before c is done (its
// peer has ended, while a handler of ours still runs): the next call
// takes a new connection rather than fail again at once on this one. The
// end of the call's own context shows nothing.
func (r *Redialer) observe(c *Conn, call bool, err error) bool {
	switch {
	case err == nil:
		if call {
			r.answered() // a notification written is no answer
		}
		return false
	case errors.Is(err, errRedialerClosed):
		return false
	case errors.Is(err, ErrNotRun):
		r.retire(c, true)
		return true
	case errors.Is(err, ErrClosed):
		r.retire(c, false)
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	r.answered() // the connection works: the peer answered
	return false
}

// answered notes that a call was answered: the next connection let go is
// the first in a row again.
func (r *Redialer) answered() {
	if r.lost.Load() != 0 {
		r.lost.Store(0)
	}
}

// retire lets c go, unless it is no longer the current connection: it is
// shut down gracefully (its calls in flight answered, its handlers
// finished) when the peer said it is stopping, and otherwise let end by
// itself; either way it is closed by Close at the latest, so that no
// connection the Redialer made outlives it.
func (r *Redialer) retire(c *Conn, graceful bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn != c || r.closed {
		return
	}
	r.letGo(c, graceful)
}

// letGo lets c, the current connection, go, and counts it as lost (see
// dialLoop); r.mu is held. c ends on a goroutine of the Redialer's, which
// waits for its child process too if Dial started one, so that Close
// waits for both.
func (r *Redialer) letGo(c *Conn, graceful bool) {
	r.conn = nil
	r.lost.Add(1)
	ctx := r.ctx // set by the dial that made c
	r.wg.Go(func() {
		if graceful {
			_ = c.Shutdown(ctx)
		} else {
			select {
			case <-c.Done():
			case <-ctx.Done():
			}
		}
		_ = c.Close()
		c.waitProcess() // at once once ctx has ended, which kills it
	})
}

// Call calls method on the current connection, as [Conn.Call] does, and
// makes the call again on a new connection when its connection broke and
// the call surely did not run or its method may be retried. If it fails
// in the end, [MayHaveRun] reports true if any of its attempts may have
// run.
func (r *Redialer) Call(ctx context.Context, method string, params, result any) error {
	return r.send(ctx, method, true, func(c *Conn) error { return c.Call(ctx, method, params, result) })
}

// Notify sends a notification on the current connection, as [Conn.Notify]
// does, and again on a new connection if the broken one surely did not
// send it (whatever Retry says).
func (r *Redialer) Notify(ctx context.Context, method string, params any) error {
	return r.send(ctx, method, false, func(c *Conn) error { return c.Notify(ctx, method, params) })
}

// send makes attempt on the current connection, and on new ones for as
// long as again says so (MaxRetries times at most for attempts that may
// have run). Its error says that it may have run if any
// attempt may have.
func (r *Redialer) send(ctx context.Context, method string, call bool, attempt func(*Conn) error) error {
	ran := false // an attempt before this one may have run
	retries := maxRetries(r.MaxRetries)
	for {
		c, err := r.connFor(ctx)
		if err == nil {
			err = attempt(c)
			if r.again(c, method, call, err) {
				switch {
				case !MayHaveRun(err):
					continue
				case retries > 0:
					retries--
					ran = true
					continue
				}
			}
		}
		if ran && err != nil {
			return &retriedError{err: err, ran: true}
		}
		return err
	}
}

// Batch sends calls on the current connection, as [Conn.Batch] does. A
// batch is not made again: if its connection breaks, the calls without an
// answer fail with errors wrapping [ErrClosed], and the next call takes a
// new connection. If no connection comes before ctx ends, or the
// Redialer is closed, Batch returns why, and so does each call's Err
// (nothing was sent). Its answers count as calls answered, for the waits
// between connections let go one after another (see [Redialer]).
func (r *Redialer) Batch(ctx context.Context, calls ...*BatchCall) error {
	c, err := r.connFor(ctx)
	if err != nil {
		// No connection: nothing was sent, and each call says so too, as
		// on a connection that has ended.
		for _, bc := range calls {
			if !bc.Notify {
				bc.Err = err
			}
		}
		return err
	}
	err = c.Batch(ctx, calls...)
	for _, bc := range calls {
		if !bc.Notify {
			r.observe(c, true, bc.Err)
		}
	}
	if err != nil {
		r.observe(c, false, err)
	}
	return err
}

// Stream calls a streaming method on the current connection, as
// [Conn.Stream] does. A stream is not made again: if its connection
// breaks, its last pair carries an error wrapping [ErrClosed], and the
// next call takes a new connection. Its answer counts as a call answered.
func (r *Redialer) Stream(ctx context.Context, method string, params any) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		c, err := r.connFor(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		var last error
		for item, err := range c.Stream(ctx, method, params) {
			last = err
			if !yield(item, err) {
				return
			}
		}
		r.observe(c, true, last)
	}
}

// Close closes the current connection, then ends the context of Dial,
// which stops a dial under way, and makes every later call fail with an
// error wrapping [ErrClosed]; calls waiting for a connection fail at once.
// If Dial started a child process with [StartProcess], Close first waits
// for it to exit once its input has ended, as long as a Process waits
// when its connection ends (5 seconds) before it kills it; the children
// of connections let go earlier are killed. It returns once the dialing
// goroutine, and every connection and child process it made, have ended.
// Close is idempotent.
func (r *Redialer) Close() error {
	r.mu.Lock()
	if !r.closed && r.closing != nil {
		close(r.closing)
	}
	r.closed = true
	c := r.conn
	r.conn = nil
	stop := r.stop
	r.mu.Unlock()
	if c != nil {
		_ = c.Close() // first, so that a child process gets its end of input rather than a kill
		c.waitProcess()
	}
	if stop != nil {
		stop()
	}
	r.wg.Wait() // the dialing goroutine, if any
	return nil
}
