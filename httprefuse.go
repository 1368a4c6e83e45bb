package jsonrpc

// This file holds the answers of the HTTP requests that the server does
// not serve: those that come after Shutdown or Close, those its memory
// budget has no room for, and those refused with their body unread.

import "net/http"

// closeUnread has the response to r close the connection when r has a
// body that is left unread: otherwise net/http reads on (up to 256 KiB)
// before it writes the status, and waits for a body that stalls.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil && r.Body != http.NoBody {
		w.Header().Set("Connection", "close")
	}
}

// refuseHTTP answers a request that came after Shutdown or Close, and did
// not run: 503 Service Unavailable, with "Retry-After: 1" and
// "Connection: close"; its body is, when the request's body holds calls
// and the client takes JSON, their answers, each [ErrNotRun] (one answer,
// or an array for a batch), and otherwise a line of text.
func refuseHTTP(w http.ResponseWriter, r *http.Request, body []byte, maxBatch int) {
	unavailable(w, r, notRunAnswers(body, maxBatch), "server stopping: request not run")
}

// shedHTTP answers a request whose body the server's memory budget had
// no room for, and that did not run: 503 Service Unavailable, with
// "Retry-After: 1" and "Connection: close" (the body is not read to its
// end), and, when the client takes JSON, an answer with a null id (the
// body was not read) whose error is [ErrOverloaded].
func shedHTTP(w http.ResponseWriter, r *http.Request) {
	unavailable(w, r, appendErrorResponse(nil, nullID, errServerFull), "server overloaded: request not run")
}

// unavailable writes the 503 of a request that did not run, with
// "Retry-After: 1" and "Connection: close": answer, JSON, if it is not nil
// and the client takes JSON, and otherwise text.
func unavailable(w http.ResponseWriter, r *http.Request, answer []byte, text string) {
	h := w.Header()
	h.Set("Retry-After", "1")
	h.Set("Connection", "close")
	if answer != nil && acceptsJSON(r.Header.Values("Accept")) {
		h.Set("Content-Type", contentJSON)
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(answer)
		return
	}
	http.Error(w, text, http.StatusServiceUnavailable)
}

// notRunAnswers returns the answers, each errStopping, to the calls of
// body, one message or a batch; nil if it holds none.
func notRunAnswers(body []byte, maxBatch int) []byte {
	maxBatch = orDefault(maxBatch, defaultMaxBatch)
	var one envelope
	kind, batch := scanLine(body, &one, nil, maxBatch)
	isCall := func(e *envelope) bool {
		return e.object && e.method != nil && e.id != nil && !e.dupID && validID(e.id)
	}
	switch kind {
	case lineObject:
		if isCall(&one) {
			return appendErrorResponse(nil, one.id, errStopping)
		}
	case lineBatch:
		var out []byte
		for i := range batch {
			if !isCall(&batch[i]) {
				continue
			}
			if out == nil {
				out = append(out, '[')
			} else {
				out = append(out, ',')
			}
			out = appendErrorResponse(out, batch[i].id, errStopping)
		}
		if out != nil {
			return append(out, ']')
		}
	}
	return nil
}
