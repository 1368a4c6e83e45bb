package oursimpl

import (
	"encoding/json"
	"testing"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

var handInputs = []string{
	`{"minuend":42,"subtrahend":3}`,
	` { "subtrahend" : -3 , "minuend" : 0 } `,
	`{"minuend":42}`,
	`{"minuend":1,"subtrahend":2,"minuend":3}`,
	`{"Minuend":1,"subtrahend":2}`,
	`{"minuend":1.0,"subtrahend":2}`,
	`{"minuend":1e2,"subtrahend":2}`,
	`{"minuend":01,"subtrahend":2}`,
	`{"minuend":-,"subtrahend":2}`,
	`{"minuend":"1","subtrahend":2}`,
	`{"minuend":99999999999999999999,"subtrahend":2}`,
	`{"minuend":123456789012345678,"subtrahend":2}`,
	`{"minuend":1,"subtrahend":2,"other":true}`,
	`{"minuend":1,"subtrahend":2}x`,
	`{"minuend":1,"subtrahend":2`,
	`{"min\u0075end":1,"subtrahend":2}`,
	`{}`,
	`[1,2]`,
	`null`,
	``,
}

// TestHandParams checks that HandParams decodes every input as
// encoding/json decodes it into suite.SubParams: the same values, and an
// error exactly when encoding/json gives one.
func TestHandParams(t *testing.T) {
	for _, in := range handInputs {
		checkHand(t, []byte(in))
	}
}

func FuzzHandParams(f *testing.F) {
	for _, in := range handInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(checkHand)
}

func checkHand(t *testing.T, in []byte) {
	var want suite.SubParams
	wantErr := json.Unmarshal(in, &want)
	var got HandParams
	gotErr := json.Unmarshal(in, &got)
	if (gotErr != nil) != (wantErr != nil) || gotErr == nil && suite.SubParams(got) != want {
		t.Errorf("%q: got %+v, %v; encoding/json: %+v, %v", in, got, gotErr, want, wantErr)
	}
}

// TestHandParamsAllocs checks that the workload's params decode without
// allocating.
func TestHandParamsAllocs(t *testing.T) {
	w, _ := suite.Lookup("W2handUnmarshalJSON")
	params := w.AppendParams(nil, 123456)
	var p HandParams
	if n := testing.AllocsPerRun(100, func() {
		if err := p.UnmarshalJSON(params); err != nil {
			t.Fatal(err)
		}
	}); n != 0 || p.Minuend != 123456 || p.Subtrahend != 3 {
		t.Errorf("%d allocations, %+v", int(n), p)
	}
}
