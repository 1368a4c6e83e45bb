package suite

// The two-way workload: side A calls TwoWayOuter on side B; B's handler,
// while serving it, calls TwoWayInner back on A over the same connection,
// and answers TwoWayOuter with a value derived from inner's result. Both
// methods take TwoWayParams, decoded into the struct by encoding/json on
// every implementation, and answer an int.
const (
	TwoWayOuter = "outer"
	TwoWayInner = "inner"
)

// TwoWayParams are the params of both methods of the two-way workload.
type TwoWayParams struct {
	A int `json:"a"`
	B int `json:"b"`
}

// TwoWayInnerResult is A's answer to inner.
func TwoWayInnerResult(p TwoWayParams) int { return p.A - p.B }

// TwoWayOuterResult is B's answer to outer, given inner's result.
func TwoWayOuterResult(inner int) int { return 2*inner + 1 }
