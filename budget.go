package jsonrpc

// This file holds a Server's memory budget: the bytes that all its
// connections hold of what their peers sent, and the rules by which they
// take and give back room in it (see [Server.MaxMemory]).

import (
	"math"
	"sync"
	"sync/atomic"
)

// defaultMaxMemory is a Server's memory budget when its MaxMemory is zero.
const defaultMaxMemory = 256 << 20

// entryCost is what one more request of a batch queued or handed off
// from the reader costs against the budgets besides its bytes in the
// line: its task and its context. (A test holds it above their sizes.)
const entryCost = 256

// batchExtra is what a unit of n requests costs besides its line: its
// requests after the first, at entryCost each.
func batchExtra(n int) int { return max(n-1, 0) * entryCost }

// errServerFull answers a request that the server's memory budget has no
// room for: it did not run (see [MayHaveRun]).
var errServerFull = ErrOverloaded.WithData(map[string]string{"reason": "server memory budget"})

// A memBudget counts the bytes that the connections of one Server hold
// of what their peers sent: requests queued or running off their reading
// goroutines (the bytes their connections' own budgets count), read
// buffers past their first [initialBufSize] bytes, and HTTP bodies.
//
// Work that can wait its turn or be refused takes room with tryTake:
// past the budget it is refused, and the connection answers the requests
// with errServerFull rather than hold them. A reader that needs a larger
// buffer for the line it is reading cannot refuse a part of it: it waits
// in grow, and while one does, tryTake refuses everything else, so that
// the bytes held drain and the reader is not starved. A reader's own
// connection's bytes do not count against it (they may wait for answers
// behind the line being read), and nor, for the first reader in line, do
// those of other readers waiting (which would otherwise wait for each
// other): the budget is exceeded by at most one reader's line then.
//
// What cannot wait nor be refused, the read buffer of a request whose
// handler held its reader up, is taken with take; a reader starts no
// such handler while the budget is full.
//
// A nil *memBudget is no budget: every method does nothing.
type memBudget struct {
	max     int64
	held    atomic.Int64
	peak    atomic.Int64 // the most held, for the tests
	waiting atomic.Int32 // readers waiting in grow

	mu      sync.Mutex
	room    chan struct{} // closed and made again when bytes come back while readers wait
	line    []*lineReader // readers waiting in grow, first come first
	partial atomic.Int64  // bytes that the readers in line hold; changed under mu
}

func newMemBudget(max int64) *memBudget {
	return &memBudget{max: max, room: make(chan struct{})}
}

// full reports whether the budget lacks room for one more read buffer
// of initialBufSize bytes (what a request whose handler holds its reader
// up comes to hold), not counting own bytes, those of the caller's read
// buffer, nor those of the readers waiting for room: a reader then starts
// no request on its own goroutine. (A line read whole costs nothing more
// to run there; what it may come to hold is bounded so.)
func (b *memBudget) full(own int) bool {
	return b != nil && b.held.Load()-int64(own)-b.partial.Load()+initialBufSize > b.max
}

// tryTake takes n bytes if they fit beside what is held but own bytes
// (those of the caller's read buffer, which it lets go once empty), or
// if nothing else is held (so that one request larger than the budget is
// not refused for ever), and no reader waits for room; it reports
// whether it took them.
func (b *memBudget) tryTake(n, own int) bool {
	if b == nil {
		return true
	}
	for {
		if b.waiting.Load() > 0 {
			return false
		}
		h := b.held.Load()
		if others := h - int64(own); others > 0 && others+int64(n) > b.max {
			return false
		}
		if b.held.CompareAndSwap(h, h+int64(n)) {
			b.notePeak(h + int64(n))
			return true
		}
	}
}

// take takes n bytes whatever the budget holds.
func (b *memBudget) take(n int) {
	if b != nil && n != 0 {
		b.notePeak(b.held.Add(int64(n)))
	}
}

// notePeak notes that h bytes are held.
func (b *memBudget) notePeak(h int64) {
	for p := b.peak.Load(); h > p && !b.peak.CompareAndSwap(p, h); p = b.peak.Load() {
	}
}

// give gives back n bytes, and wakes the readers waiting for room.
func (b *memBudget) give(n int) {
	if b == nil || n == 0 {
		return
	}
	b.held.Add(int64(-n))
	// waiting is stored before a reader reads held, and held before wake
	// reads waiting: either the reader sees the room or this wakes it.
	b.wake()
}

// grow takes n more bytes for lr's buffer, waiting while they do not fit
// (see memBudget), and reports whether it took them: it gives up when
// stop reports true, or quit is closed (stopReading and abort call wake).
// own is what lr's connection holds besides lr's buffer.
func (b *memBudget) grow(lr *lineReader, n int, own *atomic.Int64, stop func() bool, quit <-chan struct{}) bool {
	b.mu.Lock()
	if len(b.line) == 0 {
		// Room now, and no reader before this one: it need not wait,
		// and must not count as waiting, which would shed the work of
		// every other connection meanwhile.
		others := b.held.Load() - own.Load() - int64(lr.charged)
		if others <= 0 || others+int64(lr.charged+n) <= b.max {
			b.notePeak(b.held.Add(int64(n)))
			b.mu.Unlock()
			return true
		}
	}
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	b.line = append(b.line, lr)
	b.partial.Add(int64(lr.charged))
	// The first in line no longer waits for this reader's bytes.
	b.wakeLocked()
	defer func() {
		for i, w := range b.line {
			if w == lr {
				b.line = append(b.line[:i], b.line[i+1:]...)
				break
			}
		}
		b.partial.Add(-int64(lr.charged))
		b.mu.Unlock()
	}()
	for {
		others := b.held.Load() - own.Load() - int64(lr.charged)
		if b.line[0] == lr {
			// The first in line does not wait for those behind it.
			others -= b.partial.Load() - int64(lr.charged)
		}
		if others <= 0 || others+int64(lr.charged+n) <= b.max {
			b.notePeak(b.held.Add(int64(n)))
			return true
		}
		if stop() {
			return false
		}
		room := b.room
		b.mu.Unlock()
		select {
		case <-room:
		case <-quit:
		}
		b.mu.Lock()
	}
}

// wake wakes the readers waiting for room, if any, to look again
// whether they have it or should stop.
func (b *memBudget) wake() {
	// waiting is stored before a reader looks, and what gives it room or
	// makes it stop before this reads waiting: either the reader sees it
	// or this wakes it.
	if b == nil || b.waiting.Load() == 0 {
		return
	}
	b.mu.Lock()
	b.wakeLocked()
	b.mu.Unlock()
}

// wakeLocked wakes the readers waiting for room; b.mu is held.
func (b *memBudget) wakeLocked() {
	close(b.room)
	b.room = make(chan struct{})
}

// readBudget is what a connection's reader needs to grow its buffer in
// its server's budget.
type readBudget struct {
	mem  *memAccount
	own  *atomic.Int64 // the bytes the connection's units hold
	stop func() bool   // reading has stopped
	quit <-chan struct{}
}

// charge brings the bytes lr's buffer holds against the budget to those
// of a buffer of size bytes, waiting for room if they grow; it reports
// false if reading stopped meanwhile.
func (lr *lineReader) charge(size int) bool {
	want := max(size-initialBufSize, 0)
	if lr.budget == nil || want == lr.charged {
		return true
	}
	if want < lr.charged {
		lr.budget.mem.give(lr.charged - want)
		lr.charged = want
		return true
	}
	rb := lr.budget
	if !rb.mem.grow(lr, want-lr.charged, rb.own, rb.stop, rb.quit) {
		return false
	}
	lr.charged = want
	return true
}

// A memAccount is one connection's share of its server's memory budget:
// what it takes and gives goes through it, so that when the connection
// ends, close gives back what it still holds (requests dropped from its
// queue, its read buffer), and what a goroutine of it that outlives it
// gives or takes later is not counted again. One whose mem is nil is no
// budget.
type memAccount struct {
	mem  *memBudget
	held atomic.Int64 // bytes taken and not given back; acctClosed once closed
}

// acctClosed marks a closed memAccount.
const acctClosed = math.MinInt64 / 2

// add counts n more bytes taken, and reports false if the account is
// closed.
func (a *memAccount) add(n int) bool {
	for {
		h := a.held.Load()
		if h < 0 {
			return false
		}
		if a.held.CompareAndSwap(h, h+int64(n)) {
			return true
		}
	}
}

func (a *memAccount) full(own int) bool { return a.mem.full(own) }

func (a *memAccount) tryTake(n, own int) bool {
	if a.mem == nil {
		return true
	}
	if !a.mem.tryTake(n, own) {
		return false
	}
	if !a.add(n) {
		a.mem.give(n)
	}
	return true
}

func (a *memAccount) take(n int) {
	if a.mem != nil && n != 0 && a.add(n) {
		a.mem.take(n)
	}
}

func (a *memAccount) give(n int) {
	if a.mem != nil && n != 0 && a.add(-n) {
		a.mem.give(n)
	}
}

// grow takes n bytes for lr's buffer as memBudget.grow does; it reports
// false, holding nothing more, if reading stopped or the account closed.
func (a *memAccount) grow(lr *lineReader, n int, own *atomic.Int64, stop func() bool, quit <-chan struct{}) bool {
	if !a.mem.grow(lr, n, own, stop, quit) {
		return false
	}
	if !a.add(n) {
		a.mem.give(n)
		return false
	}
	return true
}

func (a *memAccount) wake() { a.mem.wake() }

// close gives back what the connection still holds; from then on the
// account counts nothing.
func (a *memAccount) close() {
	if a.mem == nil {
		return
	}
	if h := a.held.Swap(acctClosed); h > 0 {
		a.mem.give(int(h))
	}
}
