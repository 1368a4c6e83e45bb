package jsonrpc

// This file holds the watch for a silent peer (Options.SilenceTimeout): a
// timer that runs only while this side's calls await answers, and samples
// a counter that the reader bumps each time a Read returns, so that the
// read path reads no clock.

import "time"

// silenceTicks is how many samples make one SilenceTimeout: a silent peer
// is noticed once calls have waited between one and one and a quarter
// SilenceTimeouts.
const silenceTicks = 4

// silenceError is why a connection ended whose peer sent nothing while
// this side's calls waited for SilenceTimeout.
type silenceError struct{ timeout time.Duration }

func (e *silenceError) Error() string {
	return "jsonrpc: the peer sent nothing for " + e.timeout.String() + " while calls awaited answers (SilenceTimeout)"
}

// Unwrap makes the silence, which Conn.Wait returns, an error wrapping
// ErrClosed, as the calls' errors are.
func (e *silenceError) Unwrap() error { return ErrClosed }

// silenceWatch is the state of the watch, guarded by callTable.pmu.
type silenceWatch struct {
	timeout  time.Duration // SilenceTimeout; zero for no watch
	timer    *time.Timer   // made at the first call
	watching bool          // the timer is armed
	// since is when calls last began to await answers, or the last
	// sample after it; zero while none does. waited is the time calls
	// awaited answers in spans that ended since the last sample.
	since  time.Time
	waited time.Duration
	quiet  time.Duration // calls' waiting since the peer last sent anything
	fills  uint64        // the reader's count of Reads at the last sample
}

// watchSilence notes that a call starts to await its answer, on a
// connection with a SilenceTimeout, and arms the watch unless it is
// armed. c.pmu is held, and the call is in c.pending.
func (c *conn) watchSilence() {
	w := &c.silence
	if len(c.pending) == 1 {
		w.since = time.Now()
	}
	if w.watching {
		return
	}
	w.watching = true
	every := max(w.timeout/silenceTicks, time.Millisecond)
	if w.timer == nil {
		w.timer = time.AfterFunc(every, c.silenceTick)
		return
	}
	w.timer.Reset(every)
}

// restSilence notes, as a call leaves c.pending, whether it was the last
// to await an answer, and if so how long calls waited. c.pmu is held.
func (c *callTable) restSilence() {
	if w := &c.silence; len(c.pending) == 0 && !w.since.IsZero() {
		w.waited += time.Since(w.since)
		w.since = time.Time{}
	}
}

// silenceTick samples the reader's count of Reads. If the count has not
// moved since the last sample and the reader waits in Read, the time
// calls awaited answers since then adds to the quiet time; otherwise the
// quiet time starts again from zero. Once it reaches SilenceTimeout, the
// connection ends. Samples go on while calls await answers, and one more
// after: then the watch rests until the next call, keeping the quiet
// time, so that calls each given up before SilenceTimeout (or before a
// sample) still add up to it, and only the time they waited counts.
func (c *conn) silenceTick() {
	c.pmu.Lock()
	w := &c.silence
	if c.callErr != nil {
		w.watching = false
		c.pmu.Unlock()
		return
	}
	waited := w.waited
	if !w.since.IsZero() {
		now := time.Now()
		waited += now.Sub(w.since)
		w.since = now
	}
	w.waited = 0
	if n := c.fills.Load(); n != w.fills || !c.parked.Load() {
		w.fills, w.quiet = n, 0
	} else {
		w.quiet += waited
	}
	if w.quiet >= w.timeout {
		w.watching = false
		c.pmu.Unlock()
		c.abort(&silenceError{timeout: w.timeout})
		return
	}
	if c.awaiting.Load() == 0 {
		w.watching = false
		c.pmu.Unlock()
		return
	}
	w.timer.Reset(max(w.timeout/silenceTicks, time.Millisecond))
	c.pmu.Unlock()
}
