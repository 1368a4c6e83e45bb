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

// silenceWatch is the state of the watch, guarded by callTable.pmu.
type silenceWatch struct {
	timeout  time.Duration // SilenceTimeout; zero for no watch
	timer    *time.Timer   // made at the first call
	watching bool          // the timer is armed
	quiet    int           // samples in a row with calls waiting and nothing read
	fills    uint64        // the reader's count of Reads at the last sample
}

// watchSilence arms the watch, unless it is armed, as a call starts to
// await its answer on a connection with a SilenceTimeout. c.pmu is held.
func (c *conn) watchSilence() {
	w := &c.silence
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

// silenceTick samples the reader's count of Reads. A sample at which
// calls await answers, the reader waits in Read, and the count has not
// moved since the last one is quiet; silenceTicks of them in a row end the
// connection. Samples go on while calls await answers: when none does,
// the watch rests until the next call, and keeps its count of quiet
// samples, so that calls each given up before SilenceTimeout still add
// up to it.
func (c *conn) silenceTick() {
	c.pmu.Lock()
	w := &c.silence
	if c.callErr != nil || c.awaiting.Load() == 0 {
		w.watching = false
		c.pmu.Unlock()
		return
	}
	if n := c.fills.Load(); n != w.fills || !c.parked.Load() {
		w.fills, w.quiet = n, 0
	} else {
		w.quiet++
	}
	if w.quiet >= silenceTicks {
		w.watching = false
		c.pmu.Unlock()
		c.abort(&silenceError{timeout: w.timeout})
		return
	}
	w.timer.Reset(max(w.timeout/silenceTicks, time.Millisecond))
	c.pmu.Unlock()
}
