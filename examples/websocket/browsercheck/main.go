// Command browsercheck loads a page in headless Chromium, waits until the
// page says it has finished, and prints the page's DOM on standard output.
// browser-check.sh uses it to run the example's page and read its answers.
//
// It drives Chromium over the DevTools protocol on a pipe
// (--remote-debugging-pipe: JSON messages ended by a NUL byte, written to
// the browser's file descriptor 3 and read from its 4), with nothing but
// the standard library. A page may take its time: unlike --dump-dom, which
// prints the DOM when the page has loaded (or when a virtual time budget
// runs out, which WebSocket traffic does not hold back), it waits until
// the text of the element -id is no longer -while, for at most -timeout.
// The page's console messages and uncaught exceptions go to standard
// error.
//
// Usage:
//
//	browsercheck [-chromium /usr/bin/chromium] [-id status] [-while running] [-timeout 60s] URL
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

func main() {
	chromium := flag.String("chromium", "/usr/bin/chromium", "the Chromium `program`")
	id := flag.String("id", "status", "the `id` of the element whose text says whether the page is done")
	while := flag.String("while", "running", "the element's `text` while the page is not done")
	timeout := flag.Duration("timeout", time.Minute, "how long to wait for the page in all")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: browsercheck [flags] URL")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	dom, err := run(ctx, *chromium, flag.Arg(0), *id, *while)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browsercheck:", err)
		os.Exit(1)
	}
	fmt.Println(dom)
}

// run starts Chromium, loads url, waits for the page and returns its DOM.
func run(ctx context.Context, chromium, url, id, while string) (dom string, err error) {
	profile, err := os.MkdirTemp("", "browsercheck-profile-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(profile)

	toBrowser, ourEnd, err := os.Pipe() // the browser reads its commands on fd 3
	if err != nil {
		return "", err
	}
	fromBrowser, theirEnd, err := os.Pipe() // and writes its answers on fd 4
	if err != nil {
		return "", err
	}
	cmd := exec.Command(chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowser, theirEnd}
	cmd.Stderr = io.Discard // Chromium's own complaints (no D-Bus here, and so on)
	if err := cmd.Start(); err != nil {
		return "", err
	}
	toBrowser.Close()
	theirEnd.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b := newBrowser(ourEnd, fromBrowser)
	defer func() {
		// Ask the browser to close, and kill it if it takes long.
		_, _ = b.send("", "Browser.close", nil) // it may be gone already
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		ourEnd.Close()
		fromBrowser.Close()
	}()

	var target struct{ TargetID string }
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": url}, &target); err != nil {
		return "", err
	}
	var attached struct{ SessionID string }
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return "", err
	}
	session := attached.SessionID
	if err := b.call(ctx, session, "Runtime.enable", nil, nil); err != nil {
		return "", err
	}

	// Poll the element's text: the page may still be loading, or not yet
	// be the one asked for, between two polls.
	expr := fmt.Sprintf("document.getElementById(%q)?.textContent ?? null", id)
	for {
		var text *string
		if err := b.evaluate(ctx, session, expr, &text); err != nil && ctx.Err() != nil {
			return "", fmt.Errorf("waiting for #%s: %w", id, err)
		}
		if text != nil && *text != while && strings.HasPrefix(b.location(ctx, session), url) {
			break
		}
		select {
		case <-ctx.Done():
			current := "no such element"
			if text != nil {
				current = fmt.Sprintf("%q", *text)
			}
			return "", fmt.Errorf("the page did not finish: #%s is %s: %w", id, current, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := b.evaluate(ctx, session, "document.documentElement.outerHTML", &dom); err != nil {
		return "", err
	}
	return dom, nil
}

// A browser is a DevTools protocol connection to Chromium on its pipe.
type browser struct {
	w io.Writer

	mu      sync.Mutex
	wmu     sync.Mutex
	nextID  int
	pending map[int]chan message
	readErr error
}

type message struct {
	ID        int             `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func newBrowser(w io.Writer, r io.Reader) *browser {
	b := &browser{w: w, pending: make(map[int]chan message)}
	go b.read(r)
	return b
}

// read delivers the browser's answers to their calls, and prints the
// page's console messages and exceptions, until the pipe closes.
func (b *browser) read(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = fmt.Errorf("reading from the browser: %w", err)
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m message
		if err := json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			continue
		}
		switch m.Method {
		case "Runtime.consoleAPICalled":
			var p struct {
				Type string
				Args []struct {
					Value       any
					Description string
				}
			}
			_ = json.Unmarshal(m.Params, &p) // what does not decode prints empty
			var parts []string
			for _, a := range p.Args {
				if a.Value != nil {
					parts = append(parts, fmt.Sprint(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			fmt.Fprintf(os.Stderr, "page console.%s: %s\n", p.Type, strings.Join(parts, " "))
		case "Runtime.exceptionThrown":
			fmt.Fprintf(os.Stderr, "page exception: %s\n", m.Params)
		}
		if m.ID == 0 {
			continue
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// send sends a command and returns the channel its answer comes on.
func (b *browser) send(session, method string, params any) (<-chan message, error) {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return nil, b.readErr
	}
	b.nextID++
	id := b.nextID
	ch := make(chan message, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	cmd := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		cmd["sessionId"] = session
	}
	msg, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if _, err := b.w.Write(append(msg, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return ch, nil
}

// call sends a command and decodes its result into result, if not nil.
func (b *browser) call(ctx context.Context, session, method string, params, result any) error {
	ch, err := b.send(session, method, params)
	if err != nil {
		return err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			b.mu.Lock()
			defer b.mu.Unlock()
			return fmt.Errorf("%s: %w", method, b.readErr)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(m.Result, result)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// evaluate evaluates a JavaScript expression in the page and decodes its
// value into v.
func (b *browser) evaluate(ctx context.Context, session, expr string, v any) error {
	var res struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct{ Text string }
	}
	params := map[string]any{"expression": expr, "returnByValue": true}
	if err := b.call(ctx, session, "Runtime.evaluate", params, &res); err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return errors.New(res.ExceptionDetails.Text)
	}
	if res.Result.Value == nil {
		res.Result.Value = json.RawMessage("null")
	}
	return json.Unmarshal(res.Result.Value, v)
}

// location returns the page's address, or "" if it cannot be had.
func (b *browser) location(ctx context.Context, session string) string {
	var href string
	if b.evaluate(ctx, session, "location.href", &href) != nil {
		return ""
	}
	return href
}
