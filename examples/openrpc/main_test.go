package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ndjsonrpc/jsonrpc"
)

// serve runs the example's methods over the lines in, and returns the
// lines answered.
func serve(t *testing.T, in string) []string {
	t.Helper()
	var out bytes.Buffer
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: newMux(nil)}}
	if err := srv.Serve(t.Context(), strings.NewReader(in+"\n"), &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

// TestItemsBounded checks that count and progress answer up to maxItems
// items, and refuse more with -32602 before they
// loop.
func TestItemsBounded(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		lines        int    // lines answered
		code         string // the error code of the last line, or ""
	}{
		{"count", `{"n":1000}`, 1001, ""},
		{"count", `{"n":1001}`, 1, "-32602"},
		{"count", `{"n":5000}`, 1, "-32602"},
		{"count", `{"n":"x"}`, 1, "-32602"},
		{"progress", `{"count":1000}`, 1001, ""},
		{"progress", `{"count":5000}`, 1, "-32602"},
		{"progress", `{"count":1001}`, 1, "-32602"},
	} {
		t.Run(tc.name+tc.params, func(t *testing.T) {
			lines := serve(t, `{"jsonrpc":"2.0","id":1,"method":"`+tc.name+`","params":`+tc.params+`}`)
			if len(lines) != tc.lines {
				t.Fatalf("got %d lines, want %d; the last: %s", len(lines), tc.lines, lines[len(lines)-1])
			}
			var last struct {
				Error *struct {
					Code json.Number `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
				t.Fatal(err)
			}
			var code string
			if last.Error != nil {
				code = last.Error.Code.String()
			}
			if code != tc.code {
				t.Errorf("the answer's error code is %q, want %q: %s", code, tc.code, lines[len(lines)-1])
			}
		})
	}
}

// TestDocumentStatesTheBound checks that rpc.discover gives the
// maximum of count's and progress's params.
func TestDocumentStatesTheBound(t *testing.T) {
	lines := serve(t, `{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}`)
	var answer struct {
		Result struct {
			Methods []struct {
				Name   string `json:"name"`
				Params []struct {
					Schema json.RawMessage `json:"schema"`
				} `json:"params"`
			} `json:"methods"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &answer); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, m := range answer.Result.Methods {
		if m.Name != "count" && m.Name != "progress" {
			continue
		}
		found++
		var schema struct {
			Maximum *float64 `json:"maximum"`
		}
		if len(m.Params) != 1 || json.Unmarshal(m.Params[0].Schema, &schema) != nil || schema.Maximum == nil || *schema.Maximum != maxItems {
			t.Errorf("%s's params do not state the maximum %d: %s", m.Name, maxItems, m.Params)
		}
	}
	if found != 2 {
		t.Errorf("found %d of the methods count and progress, want 2", found)
	}
}

// TestHTTPServerBounds checks that the HTTP server of -http bounds how
// long a request may take to arrive and its answer to leave.
func TestHTTPServerBounds(t *testing.T) {
	hs := newHTTPServer(http.NotFoundHandler())
	if hs.ReadHeaderTimeout <= 0 || hs.ReadTimeout <= 0 || hs.WriteTimeout <= 0 || hs.IdleTimeout <= 0 {
		t.Errorf("timeouts: header %v, read %v, write %v, idle %v; want all set", hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout)
	}
}
