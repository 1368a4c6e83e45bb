package jsonrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

func TestCodes(t *testing.T) {
	tests := []struct {
		name     string
		code     jsonrpc.Code
		value    int
		sentinel *jsonrpc.Error
		text     string
	}{
		{"parse error", jsonrpc.CodeParseError, -32700, jsonrpc.ErrParse, "Parse error"},
		{"invalid request", jsonrpc.CodeInvalidRequest, -32600, jsonrpc.ErrInvalidRequest, "Invalid Request"},
		{"method not found", jsonrpc.CodeMethodNotFound, -32601, jsonrpc.ErrMethodNotFound, "Method not found"},
		{"invalid params", jsonrpc.CodeInvalidParams, -32602, jsonrpc.ErrInvalidParams, "Invalid params"},
		{"internal error", jsonrpc.CodeInternalError, -32603, jsonrpc.ErrInternal, "Internal error"},
		{"request cancelled", jsonrpc.CodeRequestCancelled, -32800, jsonrpc.ErrRequestCancelled, "Request cancelled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.value, int(tc.code))
			assert.Equal(t, tc.text, tc.code.String())
			assert.Equal(t, tc.code, tc.sentinel.Code)
			assert.Equal(t, tc.text, tc.sentinel.Message)
			assert.Nil(t, tc.sentinel.Data)
			assert.Equal(t, fmt.Sprintf("jsonrpc: code %d: %s", tc.value, tc.text), tc.sentinel.Error())
		})
	}
	assert.Equal(t, jsonrpc.Code(-32099), jsonrpc.CodeServerErrorMin)
	assert.Equal(t, jsonrpc.Code(-32000), jsonrpc.CodeServerErrorMax)
}

func TestCodeString(t *testing.T) {
	tests := []struct {
		code jsonrpc.Code
		want string
	}{
		{-32000, "Server error -32000"},
		{-32001, "Server error -32001"},
		{-32099, "Server error -32099"},
		{-32100, "error -32100"},
		{-31999, "error -31999"},
		{0, "error 0"},
		{42, "error 42"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.code.String())
		})
	}
}

func TestErrorConstructors(t *testing.T) {
	var err error = jsonrpc.NewError(-32001, "custom failure")
	assert.EqualError(t, err, "jsonrpc: code -32001: custom failure")

	e := jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "want %d numbers, got %q", 2, "x")
	assert.Equal(t, jsonrpc.CodeInvalidParams, e.Code)
	assert.Equal(t, `want 2 numbers, got "x"`, e.Message)
	assert.Nil(t, e.Data)

	base := jsonrpc.NewError(-32001, "custom failure")
	withData := base.WithData(map[string]any{"reason": "demo", "n": 1})
	assert.NotSame(t, base, withData, "WithData returns a copy")
	assert.Nil(t, base.Data, "WithData leaves the receiver alone")
	assert.Equal(t, base.Code, withData.Code)
	assert.Equal(t, base.Message, withData.Message)
	assert.JSONEq(t, `{"reason":"demo","n":1}`, string(withData.Data))

	sentinel := jsonrpc.ErrInvalidParams.WithData("detail")
	assert.Nil(t, jsonrpc.ErrInvalidParams.Data, "a sentinel is not changed by WithData")
	assert.JSONEq(t, `"detail"`, string(sentinel.Data))

	assert.Panics(t, func() { base.WithData(make(chan int)) }, "data that cannot be encoded is a programming error")
}

func TestErrorsIsByCode(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"same sentinel", jsonrpc.ErrMethodNotFound, jsonrpc.ErrMethodNotFound, true},
		{"other message", jsonrpc.NewError(-32601, "other text"), jsonrpc.ErrMethodNotFound, true},
		{"wrapped", fmt.Errorf("x: %w", jsonrpc.NewError(-32601, "other text")), jsonrpc.ErrMethodNotFound, true},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", jsonrpc.Errorf(-32602, "n=%d", 1))), jsonrpc.ErrInvalidParams, true},
		{"joined", errors.Join(io.EOF, jsonrpc.NewError(-32001, "x")), jsonrpc.NewError(-32001, "y"), true},
		{"with data", jsonrpc.ErrInternal.WithData(1), jsonrpc.ErrInternal, true},
		{"other code", jsonrpc.NewError(-32601, "Method not found"), jsonrpc.ErrInvalidParams, false},
		{"plain error", errors.New("Method not found"), jsonrpc.ErrMethodNotFound, false},
		{"plain target", jsonrpc.ErrMethodNotFound, errors.New("Method not found"), false},
		{"nil *Error target", jsonrpc.ErrMethodNotFound, (*jsonrpc.Error)(nil), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, errors.Is(tc.err, tc.target))
		})
	}
}

func TestErrorsAsReachesData(t *testing.T) {
	err := fmt.Errorf("calling: %w", jsonrpc.NewError(-32001, "custom failure").WithData(map[string]string{"reason": "demo"}))
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, jsonrpc.Code(-32001), e.Code)
	assert.Equal(t, "custom failure", e.Message)
	assert.JSONEq(t, `{"reason":"demo"}`, string(e.Data))
}

type myError struct{ text string }

func (e myError) Error() string { return e.text }

// TestHandlerErrors checks how the errors that handlers return go on the
// wire.
func TestHandlerErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		hide bool
		want string // the "error" member
	}{
		{
			name: "*Error as is",
			err:  jsonrpc.NewError(-32001, "custom failure").WithData(map[string]string{"reason": "demo"}),
			want: `{"code":-32001,"message":"custom failure","data":{"reason":"demo"}}`,
		},
		{
			name: "wrapped *Error as is",
			err:  fmt.Errorf("while doing it: %w", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "need %d", 2)),
			want: `{"code":-32602,"message":"need 2"}`,
		},
		{
			name: "sentinel",
			err:  jsonrpc.ErrInvalidParams,
			want: `{"code":-32602,"message":"Invalid params"}`,
		},
		{
			name: "application code",
			err:  jsonrpc.NewError(7, "seven"),
			want: `{"code":7,"message":"seven"}`,
		},
		{
			name: "plain error",
			err:  errors.New("boom"),
			want: `{"code":-32603,"message":"Internal error","data":{"exception":"*errors.errorString","detail":"boom"}}`,
		},
		{
			name: "wrapped plain error",
			err:  fmt.Errorf("open: %w", io.ErrUnexpectedEOF),
			want: `{"code":-32603,"message":"Internal error","data":{"exception":"*fmt.wrapError","detail":"open: unexpected EOF"}}`,
		},
		{
			name: "own error type",
			err:  myError{"mine <&>"},
			want: `{"code":-32603,"message":"Internal error","data":{"exception":"jsonrpc_test.myError","detail":"mine <&>"}}`,
		},
		{
			name: "context error without a cancel request",
			err:  context.Canceled,
			want: `{"code":-32603,"message":"Internal error","data":{"exception":"*errors.errorString","detail":"context canceled"}}`,
		},
		{
			name: "hidden detail",
			err:  errors.New("secret path /etc/x"),
			hide: true,
			want: `{"code":-32603,"message":"Internal error","data":{"exception":"*errors.errorString"}}`,
		},
		{
			name: "hidden detail keeps *Error",
			err:  jsonrpc.NewError(-32001, "shown").WithData("kept"),
			hide: true,
			want: `{"code":-32001,"message":"shown","data":"kept"}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mux := new(jsonrpc.Mux)
			mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) { return nil, tc.err })
			got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, HideErrorDetail: tc.hide}},
				req("1", "fail", "")+"\n"+req("", "fail", "")+"\n")
			require.Len(t, got, 1, "the notification is not answered")
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":`+tc.want+`}`, got[0])
		})
	}
}

func TestHandlerErrorOfNotificationIsLogged(t *testing.T) {
	var log lockedBuffer
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, errors.New("failure nobody hears about")
	})
	got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, Logger: slogText(&log)}}, req("", "fail", "")+"\n")
	assert.Empty(t, got)
	assert.Contains(t, log.String(), "failure nobody hears about")
}
