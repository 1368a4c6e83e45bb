package jsonrpc

// This file holds the connection's state and lifecycle: the conn struct,
// the goroutines it waits for, how reading stops and the connection
// aborts, and the writing of answers and of what is buffered.
// It depends on the writer and reader (transport.go, linereader.go) and on the encoding
// of answers (encode.go); the layers above it (scheduling, reading,
// outgoing calls) own the fields they name in conn.

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one connection: the engine behind [Server] and
// [Conn]. It reads messages, runs handlers for the peer's requests,
// sends this side's calls and routes their responses.
type conn struct {
	encoders   *encoders // shared by the connections of a Server
	handler    Handler
	mux        *Mux // the handler, when it is a non-nil *Mux
	log        *slog.Logger
	in         *lineReader
	out        *lineWriter
	r, w       any // the caller's reader and writer, closed on abort
	maxBatch   int
	maxFlight  int32
	budget     int        // MaxPendingBytes
	mem        memAccount // the connection's share of the Server's memory budget; nil for none
	hideDetail bool
	grace      time.Duration
	drainGrace bool
	idle       time.Duration
	seen       atomic.Uint64 // messages read, counted while idle is set
	fills      atomic.Uint64 // Reads that returned, counted while silence.timeout is set

	cancelIns []incomingCancel // the cancel notifications the peer may send
	onCancel  func(*CancelError, int, int)
	onNotify  func(*Request)

	// The outgoing side: the table of calls awaiting answers
	// (pending.go), and the interceptors of calls (call.go).
	callTable
	chain SendFunc // the interceptors of outgoing calls; nil for none

	ctx    context.Context // parent of every handler's context
	cancel context.CancelCauseFunc

	reader      atomic.Pointer[readState] // the current reading role
	running     atomic.Int32              // slots taken by units running
	held        atomic.Int64              // bytes of the units queued or running off the reader; changed under mu
	parkedBytes atomic.Int64              // of held, parkCost for each handler waiting for the peer; changed under mu

	budgetWait atomic.Bool  // the reader waits for room in the budget
	talked     atomic.Bool  // this side has sent a message of its own (see flushFromReader)
	flushArmed atomic.Bool  // flushTimer is set to write the output (see flushSoon)
	resumeN    atomic.Int32 // handlers waiting in retakeSlot: len(resume), or about to be
	inOrder    atomic.Bool  // units wait in ordered, or one in order runs off the reader; changed under mu
	offReaders atomic.Int32 // units not in order admitted off the reader and not ended; changed under mu
	order      orderConfig

	mu       sync.Mutex
	cond     sync.Cond // the queue shrank, or reading stops
	queue    []*unit
	ordered  []*unit              // units waiting for the units before them (see finishUnit)
	offWrite bool                 // a unit in order is admitted off the reader and not ended
	resume   []chan struct{}      // handlers back from the peer, waiting for a slot
	active   map[string][]*reqCtx // requests that a cancel may reach, by id
	endErr   error                // why the connection ends
	live     int                  // goroutines of ours still running
	done     bool                 // finished is closed
	finished chan struct{}        // closed when nothing but a parked reader is left

	flushTimer *time.Timer // under mu; see flushSoon

	firstRS  *readState    // the reading role's state for serve, made with the conn (ServeHTTP); nil to make one
	served   chan struct{} // closed when serve has returned, for a Conn
	released chan struct{} // closed once a Conn's writer and reader are closed too
	serveErr error         // what serve returned

	abortOnce sync.Once
	aborted   chan struct{} // closed by abort
	endOnce   sync.Once
	ended     chan struct{} // closed at the end of the input, when drainGrace
	stopping  atomic.Uint32 // readOn, readDrain (Shutdown: refuse what comes), or readStop (no more lines are to be read)
	linger    *time.Timer   // guarded by mu: ends a drain once its work is done (see checkDrainLocked)
	parked    atomic.Bool   // the reader is in Read, or about to be

	// The watchdog is a timer, armed by the reader when it starts a unit
	// and re-armed by itself while the reader is busy.
	timer   *time.Timer
	armed   atomic.Bool
	tickMu  sync.Mutex // held by a tick; serve takes it to stop ticks
	dead    bool       // guarded by tickMu: no more ticks
	lastRS  *readState // guarded by tickMu: the last tick's sample
	lastSeq uint64
}

// unblockWriter closes the writer when a write to it is still in flight,
// once what is running has been abandoned: on most writers that ends the
// write.
func (c *conn) unblockWriter() {
	if wc, ok := c.w.(io.Closer); ok && c.out.busy() {
		_ = wc.Close()
	}
}

// goLive runs f on a goroutine that the connection waits for before it
// ends, unless it has ended already.
func (c *conn) goLive(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	c.live++
	go func() {
		defer c.exit()
		f()
	}()
}

// exit counts a goroutine of the connection out.
func (c *conn) exit() {
	c.mu.Lock()
	c.live--
	c.checkDoneLocked()
	c.mu.Unlock()
}

// checkDoneLocked closes finished once no goroutine of the connection is
// left but, once reading has stopped, a reader blocked in a Read that
// could not be interrupted: nothing more will be written, so Serve may
// return, and that goroutine ends when its Read does, without serving
// what it read.
func (c *conn) checkDoneLocked() {
	if c.done {
		return
	}
	if c.live == 0 || c.live == 1 && c.parked.Load() && c.stopped() {
		c.done = true
		close(c.finished)
		if c.flushTimer != nil {
			c.flushTimer.Stop()
		}
		return
	}
	if c.stopping.Load() == readDrain {
		c.checkDrainLocked()
	}
}

// The values of conn.stopping.
const (
	readOn    = iota // reading serves what comes
	readDrain        // reading refuses what comes (see drain)
	readStop         // no more lines are to be read
)

// stopped reports whether no more lines are to be read.
func (c *conn) stopped() bool { return c.stopping.Load() == readStop }

// drainLinger is how long a draining connection goes on refusing what
// arrives once its work in flight is done, so that a request its peer
// sent as the last answer reached it is answered "not run" rather than
// lost when the connection ends.
const drainLinger = 100 * time.Millisecond

// drain begins a graceful stop (Shutdown) with cause, which Serve will
// return: reading goes on, but each request that arrives is answered at
// once with [ErrNotRun], notifications for the handler are dropped, and
// responses still reach this side's calls; the requests read before, and
// this side's calls, go on. Once that work is done, and drainLinger
// later, reading stops as stopReading stops it. An HTTP body, read whole
// already, is left to run to its end.
func (c *conn) drain(cause error) {
	if c.in.mode == modeWhole {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopping.CompareAndSwap(readOn, readDrain) {
		return
	}
	if c.endErr == nil {
		c.endErr = cause
	}
	c.cond.Broadcast()
	c.checkDrainLocked()
}

// checkDrainLocked starts the end of a drain once its work is done: no
// goroutine of the connection's but the reader, the reader not running a
// unit, nothing queued, no call of this side's awaiting its answer. It is
// checked whenever one of those ends. The end comes drainLinger later,
// whatever arrives meanwhile; a unit the reader starts in that time, read
// just before the drain began, still runs to its end, since stopReading
// only stops reading.
func (c *conn) checkDrainLocked() {
	if c.linger != nil || c.done || c.live > 1 || len(c.queue) > 0 || len(c.ordered) > 0 || c.awaiting.Load() > 0 {
		return
	}
	if rs := c.reader.Load(); rs != nil && rs.state.Load()&stateBusy != 0 {
		return
	}
	c.linger = time.AfterFunc(drainLinger, func() {
		if c.stopping.Load() == readDrain {
			c.stopReading(ErrServerClosed, true)
		}
	})
}

// checkDrain is checkDrainLocked for one who does not hold mu.
func (c *conn) checkDrain() {
	if c.stopping.Load() != readDrain {
		return
	}
	c.mu.Lock()
	c.checkDrainLocked()
	c.mu.Unlock()
}

// stopReading ends reading with cause (the first cause is kept). When
// interrupt is set, it also makes a pending Read return, in the gentlest
// way the reader allows: CloseRead (a TCP or Unix connection), a read
// deadline in the past, or, when the reader is not also the writer, Close.
// A connection that is both and allows neither is left alone, so that the
// responses still to come can be written.
func (c *conn) stopReading(cause error, interrupt bool) {
	c.mu.Lock()
	if c.endErr == nil {
		c.endErr = cause
	}
	c.stopping.Store(readStop)
	c.cond.Broadcast()
	c.checkDoneLocked()
	c.mu.Unlock()
	c.mem.wake() // a reader waiting for room in it must stop
	if !interrupt {
		return
	}
	if cr, ok := c.r.(interface{ CloseRead() error }); ok && cr.CloseRead() == nil {
		return
	}
	if d, ok := c.r.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Unix(1, 0)) == nil {
		return
	}
	if _, ok := c.r.(io.Closer); ok && c.r != c.w {
		_ = c.in.Close()
	}
}

// readStopped reports whether no more lines are to be read.
func (c *conn) readStopped() bool {
	return c.stopping.Load() == readStop || c.in.IsClosed()
}

// abort stops the connection at once: reading stops, queued requests are
// dropped, and every handler's context is cancelled.
func (c *conn) abort(cause error) {
	c.abortOnce.Do(func() {
		c.stopReading(cause, true)
		// Nothing more is written, so a reader that is also the
		// writer may be closed too.
		if _, ok := c.r.(io.Closer); ok {
			_ = c.in.Close()
		}
		c.mu.Lock()
		c.queue, c.ordered = nil, nil
		c.mu.Unlock()
		c.out.fail(&closedError{cause: cause})
		c.failCalls(cause, c.out)
		c.cancel(cause)
		close(c.aborted)
	})
}

func (c *conn) isAborted() bool {
	select {
	case <-c.aborted:
		return true
	default:
		return false
	}
}

// flushAsync has what is buffered written by a goroutine of the client's,
// unless a write is in flight, which takes it along. A write error closes
// the client.
func (c *conn) flushAsync() {
	if !c.out.pending() {
		return
	}
	c.goLive(c.flush)
}

// sendSoon adds a message that a handler sends, built by add, to the
// output, waiting for room there until ctx ends (see
// lineWriter.appendWithin), and has it written soon (see flushSoon).
func (c *conn) sendSoon(ctx context.Context, add func([]byte) []byte) error {
	unwritten, err := c.out.appendWithin(ctx, add, nil)
	if err != nil {
		return err
	}
	c.flushSoon(unwritten)
	return nil
}

// flushSoon has what is buffered (unwritten, the bytes that no write in
// flight takes along) written by a goroutine of the connection's within
// notifyDelay, unless a write takes it along first (the handler's answer,
// another call's send), and at once when highWater bytes have gathered.
// A handler's notification is never written by the handler itself, whose
// Write could block on a peer that stops reading whatever its ctx says,
// and a handler that sends many costs one timer, not a goroutine each.
func (c *conn) flushSoon(unwritten int) {
	if unwritten >= highWater {
		c.flushAsync()
		return
	}
	if c.flushArmed.Load() || !c.flushArmed.CompareAndSwap(false, true) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	if c.flushTimer == nil {
		c.flushTimer = time.AfterFunc(notifyDelay, func() {
			c.flushArmed.Store(false)
			c.flushAsync()
		})
		return
	}
	c.flushTimer.Reset(notifyDelay)
}

// notifyDelay is how long a handler's notification may wait in the
// output for a write to take it along (see flushSoon).
const notifyDelay = time.Millisecond

// flush writes what is buffered, on the calling goroutine. A write error
// closes the connection.
func (c *conn) flush() {
	if err := c.out.Flush(); err != nil {
		c.abort(err)
	}
}

// writeAnswer writes a response; flush is set off the reading goroutine,
// where nobody else would flush it soon.
func (c *conn) writeAnswer(id string, result []byte, werr *Error, flush bool) {
	var err error
	if werr == nil && len(result) >= largeResult {
		head := appendResultResponse(nil, id, nil)
		err = c.out.writeLarge(head[:len(head)-1], result, []byte("}"))
	} else {
		err = c.out.append(func(b []byte) []byte { return appendAnswer(b, id, result, werr) }, flush)
	}
	if err != nil {
		c.abort(err)
	}
}

// writeError writes an error answer from the reading goroutine, which
// does not wait for room in the output (see lineWriter.appendNow).
func (c *conn) writeError(id []byte, e *Error) {
	c.out.appendNow(func(b []byte) []byte { return appendErrorResponse(b, id, e) })
}
