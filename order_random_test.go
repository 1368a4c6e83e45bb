package jsonrpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// orderChecker checks the documented order (see [jsonrpc.Order]): a message in order starts only
// once every message before it has ended, and no message after it has
// started; any other message starts only once every message in order
// before it has ended. Messages outside the order are not checked.
type orderChecker struct {
	mu      sync.Mutex
	serial  map[int]bool // index -> in order (only messages that run a handler)
	started map[int]int  // times started
	ended   map[int]bool
	note    map[int]bool
	seq     int
	startAt map[int]int
	endAt   map[int]int
	errs    []string
}

func newOrderChecker() *orderChecker {
	return &orderChecker{serial: map[int]bool{}, started: map[int]int{}, ended: map[int]bool{}, note: map[int]bool{}, startAt: map[int]int{}, endAt: map[int]int{}}
}

func (k *orderChecker) errorf(format string, a ...any) {
	if len(k.errs) < 10 {
		k.errs = append(k.errs, fmt.Sprintf(format, a...))
	}
}

func (k *orderChecker) start(i int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seq++
	k.started[i]++
	if k.started[i] > 1 {
		k.errorf("message %d ran twice", i)
	}
	k.startAt[i] = k.seq
}

func (k *orderChecker) end(i int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seq++
	k.ended[i] = true
	k.endAt[i] = k.seq
}

// verify checks, once all has run, that of any two messages that ran, one
// of them in order, the earlier ended before the later started.
func (k *orderChecker) verify() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, si := range k.serial {
		if k.started[i] == 0 {
			continue
		}
		for j, sj := range k.serial {
			if j <= i || k.started[j] == 0 || !si && !sj {
				continue
			}
			if k.endAt[i] > k.startAt[j] {
				k.errorf("message %d (serial=%v) started before %d (serial=%v) ended", j, sj, i, si)
			}
		}
	}
}

// roMux: "n" a notification in order, "r" a concurrent request, "w" a
// request in order (Order.Requests), "f" outside the order. Params are
// [index, microseconds to sleep, panic].
func (k *orderChecker) mux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	h := jsonrpc.Func(func(ctx context.Context, p [3]int) (int, error) {
		k.start(p[0])
		defer k.end(p[0])
		if p[1] > 0 {
			select {
			case <-time.After(time.Duration(p[1]) * time.Microsecond):
			case <-ctx.Done():
			}
		}
		if p[2] == 1 {
			panic("boom")
		}
		if p[2] == 2 {
			return 0, fmt.Errorf("failed")
		}
		return p[0], nil
	})
	for _, m := range []string{"n", "r", "w", "f"} {
		mux.Handle(m, h)
	}
	// "c" and "cr": a notification in order, and a concurrent request,
	// that call the peer.
	ask := jsonrpc.Func(func(ctx context.Context, p [3]int) (int, error) {
		k.start(p[0])
		defer k.end(p[0])
		var got int
		if err := jsonrpc.Peer(ctx).Call(ctx, "ask", [1]int{p[0]}, &got); err != nil {
			return 0, err
		}
		if got != p[0] {
			return 0, fmt.Errorf("asked %d, got %d", p[0], got)
		}
		return got, nil
	})
	mux.Handle("c", ask)
	mux.Handle("cr", ask)
	return mux
}

func orderMsg(k *orderChecker, rnd *rand.Rand, i int, peer bool) string {
	method := "f" // outside the order, not checked
	switch x := rnd.IntN(10); {
	case x < 3, x < 4 && !peer:
		method = "n"
	case x < 4 && rnd.IntN(2) == 0:
		method = "c"
	case x < 4:
		method = "cr"
	case x < 7:
		method = "r"
	case x < 9:
		method = "w"
	}
	note := method == "n" || method == "c"
	if method != "f" {
		k.serial[i] = note || method == "w"
	}
	id := ""
	if note {
		k.note[i] = true
	} else {
		id = fmt.Sprintf(`"id":%d,`, i)
	}
	d := 0
	switch x := rnd.IntN(20); {
	case x == 0:
		d = 3000
	case x < 4:
		d = 200
	}
	p := 0
	if rnd.IntN(30) == 0 {
		p = 1 + rnd.IntN(2)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0",%s"method":"%s","params":[%d,%d,%d]}`, id, method, i, d, p)
}

// TestOrderRandom sends a random mix of messages (batches, parse
// errors, too-long lines, cancels, handlers that panic, fail, run long
// or call the peer) under several options, and checks the order: no
// handler runs twice, of two messages one of which is in order the
// earlier ends before the later starts, no notification is lost, and
// every request that did not run was cancelled. Its seeds are fixed, so
// a failure repeats.
func TestOrderRandom(t *testing.T) {
	variants := map[string]func(o *jsonrpc.Options){
		"default":     func(o *jsonrpc.Options) {},
		"flight1":     func(o *jsonrpc.Options) { o.MaxInFlight = 1 },
		"all":         func(o *jsonrpc.Options) { o.Order.All = true },
		"smallbudget": func(o *jsonrpc.Options) { o.MaxPendingBytes = 1500 },
		"bigflight":   func(o *jsonrpc.Options) { o.MaxInFlight = 64 },
		"header":      func(o *jsonrpc.Options) { o.Framing = jsonrpc.HeaderFraming{} },
	}
	for name, variant := range variants {
		for seed := range uint64(2) {
			t.Run(fmt.Sprint(name, seed), func(t *testing.T) {
				rnd := rand.New(rand.NewPCG(seed, 1))
				k := newOrderChecker()
				var lines []string
				n := 0
				cancelled := map[int]bool{}
				var answers []string
				// Handlers call the peer except where the budget is
				// small (while they wait, notifications past twice the
				// budget are dropped, as documented) and under
				// HeaderFraming (the answers below are written as lines).
				peer := name != "smallbudget" && name != "header"
				for range 600 {
					switch x := rnd.IntN(40); {
					case x == 0:
						lines = append(lines, `{"jsonrpc":"2.0","method":"n","params":[`) // parse error
					case x == 1:
						lines = append(lines, `{"jsonrpc":"2.0","method":"n","params":"`+strings.Repeat("x", 3000)+`"}`) // too long
					case x == 2 && n > 0:
						c := rnd.IntN(n)
						cancelled[c] = true
						lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":%d}}`, c))
					case x < 6:
						var es []string
						for range 1 + rnd.IntN(4) {
							es = append(es, orderMsg(k, rnd, n, peer))
							n++
						}
						lines = append(lines, "["+strings.Join(es, ",")+"]")
					default:
						lines = append(lines, orderMsg(k, rnd, n, peer))
						n++
					}
				}
				srv := &jsonrpc.Server{Options: jsonrpc.Options{
					Handler:        k.mux(),
					MaxMessageSize: 2048,
					MaxInFlight:    4,
					Order:          jsonrpc.Order{Requests: []string{"w"}, Concurrent: []string{"f"}},
				}}
				variant(&srv.Options)
				in, out := h3Server(t, srv)
				go func() {
					for _, l := range lines {
						if name == "header" {
							if strings.HasPrefix(l, `{"jsonrpc":"2.0","method":"n","params":[`) && strings.HasSuffix(l, "[") {
								l = "Content-Type: x\r\n\r\n" + l // bad header block
							} else {
								l = fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(l), l)
							}
						} else {
							l += "\n"
						}
						if _, err := io.WriteString(in, l); err != nil {
							return
						}
					}
					end := `{"jsonrpc":"2.0","id":"end","method":"w","params":[-1,0,0]}`
					if name == "header" {
						// A second request after it, whose answer's header ends the line of the first.
						trail := `{"jsonrpc":"2.0","id":"trail","method":"w","params":[-2,0,0]}`
						end = fmt.Sprintf("Content-Length: %d\r\n\r\n%sContent-Length: %d\r\n\r\n%s", len(end), end, len(trail), trail)
					}
					_, _ = io.WriteString(in, end+"\n")
				}()
				for {
					l := h3Recv(t, out, "the last answer")
					if strings.Contains(l, `"id":"end"`) {
						break
					}
					answers = append(answers, l)
					if strings.Contains(l, `"method":"ask"`) {
						var m struct {
							ID     json.RawMessage
							Params [1]int
						}
						require.NoError(t, json.Unmarshal([]byte(l), &m))
						go func() {
							_, _ = fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%s,"result":%d}`+"\n", m.ID, m.Params[0])
						}()
					}
				}
				k.verify()
				k.mu.Lock()
				defer k.mu.Unlock()
				for _, e := range k.errs {
					t.Error(e)
				}
				lost := 0
				for i := range k.note {
					if k.started[i] == 0 {
						lost++ // a notification is never cancelled: it must run
					}
				}
				assert.Zero(t, lost, "notifications never handled")
				require.Empty(t, k.errs)
				for i := range k.serial {
					if !k.note[i] && k.started[i] == 0 && !cancelled[i] {
						t.Errorf("request %d neither run nor cancelled: %s", i, answerFor(answers, i))
					}
				}
			})
		}
	}
}

func answerFor(answers []string, id int) string {
	var found []string
	for _, a := range answers {
		if strings.Contains(a, fmt.Sprintf(`"id":%d,`, id)) {
			found = append(found, a)
		}
	}
	return strings.Join(found, " | ")
}
