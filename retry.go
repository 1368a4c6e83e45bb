package jsonrpc

// This file holds what retrying shares: the jittered exponential backoff
// of Redialer's dials and of HTTPClient's attempts, and the retrying of
// HTTPClient's calls (its Retry, MaxRetries, MinBackoff and MaxBackoff fields).

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Backoff bounds of a Redialer or an HTTPClient whose fields are zero.
const (
	defaultMinBackoff = 50 * time.Millisecond
	defaultMaxBackoff = 5 * time.Second
)

// defaultMaxRetries is how many times a call that may have run is made
// again when MaxRetries is zero: five attempts in all, the most gRPC's
// retry policy allows.
const defaultMaxRetries = 4

// maxRetries returns n, or defaultMaxRetries for zero; a negative n is
// taken as zero.
func maxRetries(n int) int {
	if n == 0 {
		return defaultMaxRetries
	}
	return max(n, 0)
}

// backoff is a wait that doubles from a minimum to a maximum, each wait
// drawn at random between half and all of its bound, so that many clients
// of one restarted server do not return at once.
type backoff struct {
	bound, max time.Duration
}

// newBackoff returns the backoff between lo and hi; zero means 50 ms and
// 5 s.
func newBackoff(lo, hi time.Duration) backoff {
	lo, hi = orDefault(lo, defaultMinBackoff), orDefault(hi, defaultMaxBackoff)
	return backoff{bound: min(lo, hi), max: hi}
}

// next returns the next wait, and doubles the bound for the one after,
// up to the maximum (which may be as large as a Duration holds).
func (b *backoff) next() time.Duration {
	d := b.bound/2 + rand.N(b.bound/2+1)
	if b.bound > b.max/2 {
		b.bound = b.max
	} else {
		b.bound *= 2
	}
	return d
}

// sleep waits d, and reports false, at once, if ctx ends first or has
// ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retriedError is the failure of a call that was made more than once: err
// is that of the last attempt, ctxErr, if set, why no more were made, and
// ran records that an earlier attempt may have run, which MayHaveRun
// reports whatever err says.
type retriedError struct {
	err    error
	ctxErr error
	ran    bool
}

func (e *retriedError) Error() string {
	if e.ctxErr != nil {
		return e.ctxErr.Error() + "; the last attempt failed: " + e.err.Error()
	}
	return e.err.Error()
}

func (e *retriedError) Unwrap() []error {
	if e.ctxErr != nil {
		return []error{e.err, e.ctxErr}
	}
	return []error{e.err}
}

// notRunFailure reports whether err, the failure of one HTTP attempt,
// says that the request surely did not run and may be sent again: no
// connection could be made, or the server answered 503, [ErrNotRun] or
// [ErrOverloaded].
func notRunFailure(err error) bool {
	if errors.Is(err, ErrNotRun) || errors.Is(err, ErrOverloaded) {
		return true
	}
	return errors.Is(err, ErrClosed) && !MayHaveRun(err)
}

// brokenAfterSend reports whether err, the failure of one HTTP attempt,
// is one of the transport after the request was sent, so that the request
// may have run and is sent again only if its method may be retried: the
// connection broke or the response ended without the answer, or a status
// of 500 or more that is not a 503 (a proxy's 502 or 504).
func brokenAfterSend(err error) bool {
	if errors.Is(err, ErrClosed) || errors.Is(err, errNoAnswer) {
		return MayHaveRun(err)
	}
	var h *HTTPError
	return errors.As(err, &h) && h.StatusCode >= 500 && h.StatusCode != http.StatusServiceUnavailable
}

// retryAfter returns the wait that a 503's Retry-After header asks for,
// in seconds or as an HTTP date; zero if there is none.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, 1<<20)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// retrying makes attempt until it succeeds or fails in a way that is not
// to be retried, within ctx, waiting the client's backoff between
// attempts, or a 503's Retry-After when that is shorter than MaxBackoff. A
// failure that surely did not run, or one of the transport once the
// request was sent, is retried if again(mayHaveRun) says so, the latter
// at most MaxRetries times. It returns
// the last attempt's error, wrapping ctx's error too when ctx ended in a
// wait, and marked as may have run if any attempt may have.
func (c *HTTPClient) retrying(ctx context.Context, again func(mayHaveRun bool) bool, attempt func() error) error {
	err := attempt()
	if err == nil {
		return nil
	}
	b := newBackoff(c.MinBackoff, c.MaxBackoff)
	ran, tries, retries := false, 1, maxRetries(c.MaxRetries)
	for {
		var ok bool
		switch {
		case notRunFailure(err):
			ok = again(false)
		case brokenAfterSend(err):
			if ok = retries > 0 && again(true); ok {
				retries--
			}
		}
		if !ok {
			break
		}
		ran = ran || MayHaveRun(err)
		d := b.next()
		var nr *notRunError
		if errors.As(err, &nr) && nr.after > 0 && nr.after < b.max {
			d = nr.after
		}
		if !sleep(ctx, d) {
			return &retriedError{err: err, ctxErr: ctx.Err(), ran: ran}
		}
		if err = attempt(); err == nil {
			return nil
		}
		tries++
	}
	if tries == 1 {
		return err
	}
	return &retriedError{err: err, ran: ran}
}

// callAgain is the again of a call of method: not run, or Retry allows it.
func (c *HTTPClient) callAgain(method string) func(bool) bool {
	return func(mayHaveRun bool) bool { return !mayHaveRun || c.Retry(method) }
}

// batchAgain is the again of a batch: not run, or every method in it may
// be retried.
func (c *HTTPClient) batchAgain(calls []*BatchCall) func(bool) bool {
	return func(mayHaveRun bool) bool {
		if !mayHaveRun {
			return true
		}
		for _, bc := range calls {
			if !c.Retry(bc.Method) {
				return false
			}
		}
		return true
	}
}

// notifyAgain is the again of a notification: only if it surely did not
// run.
func notifyAgain(mayHaveRun bool) bool { return !mayHaveRun }

// streamRetrying makes a stream call, and makes it again as a call is made
// again, as long as no item has been yielded.
func (c *HTTPClient) streamRetrying(ctx context.Context, method string, raw []byte, yield func(json.RawMessage, error) bool) (bool, error) {
	delivered, stopped := false, false
	each := func(item json.RawMessage, err error) bool {
		delivered = true
		return yield(item, err)
	}
	again := c.callAgain(method)
	err := c.retrying(ctx, func(mayHaveRun bool) bool { return !delivered && !stopped && again(mayHaveRun) }, func() error {
		var err error
		stopped, err = c.streamOnce(ctx, method, raw, each)
		return err
	})
	return stopped, err
}
