package jsonrpc

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Struct shapes whose fields encoding/json resolves by its rules for tags
// and embedding; TestJSONFieldsMatchEncodingJSON compares jsonFields with
// the names encoding/json writes for them.
type (
	// The tags that staticcheck warns of are what FieldsTags tests.
	// FieldsSymbol's tag names a member with a symbol, which the
	// default encoding/json does not take as a name and json/v2 does.
	FieldsSymbol struct {
		X int `json:"a€"`
		Y int `json:"b☺,string"`
	}
	// FieldsInline, FieldsUnknown and FieldsQuotedName have tags that
	// json/v2 reads otherwise than the default encoding/json.
	FieldsInline struct {
		Name string
		In   FieldsInner `json:",inline"`
	}
	FieldsUnknown struct {
		Name  string
		Extra map[string]any `json:",unknown"`
	}
	FieldsQuotedName struct {
		X int `json:"'x,y'"`
	}
	FieldsTags struct {
		Plain  int
		Tagged int `json:"tagged"`
		Dash   int `json:"-"`
		//lint:ignore SA5008 a field called "-"
		DashComma int `json:"-,"`
		Options   int `json:",string"`
		//lint:ignore SA5008 not a valid name: the Go name is used
		Backslash int `json:"a\\b"`
		//lint:ignore SA5008 a valid name
		Quote   int `json:"a'b"`
		Space   int `json:"a b"`
		Punct   int `json:"!#$%&()*+-./:;<=>?@[]^_{|}~"`
		Letters int `json:"ñame"`
		//lint:ignore U1000 unexported fields are not decoded
		hidden int
	}
	FieldsInner struct {
		A int
		B int `json:"b"`
		C int
	}
	FieldsOther struct {
		A int
		B int `json:"bo"`
		D int
	}
	fieldsHidden struct {
		E int
		//lint:ignore U1000 unexported fields are not decoded
		e int
	}
	FieldsDeep struct {
		FieldsInner
		C int // shallower than FieldsInner.C
	}
	FieldsInt int
	//lint:ignore U1000 embedded in FieldsEmbeddings, which it adds nothing to
	fieldsInt int
	// Two structs at one depth: the two As cancel out, the others stand
	// alone. (Two tagged fields that cancel out are built with
	// reflect.StructOf below, out of go vet's sight.)
	FieldsConflict struct {
		FieldsInner
		FieldsOther
	}
	// The tagged one of two at one depth wins.
	FieldsTagWins struct {
		FieldsInner
		X struct {
			A int `json:"A"`
		}
		FieldsTagged
	}
	FieldsTagged struct {
		A int `json:"A"`
	}
	// The same, the tagged one first.
	FieldsTagFirst struct {
		FieldsTagged
		FieldsInner
	}
	FieldsEmbeddings struct {
		*FieldsInner              // pointer
		fieldsHidden              // unexported type, exported fields
		FieldsOther  `json:"oth"` // named: a field, not embedded
		FieldsInt                 // not a struct: a field called FieldsInt
		//lint:ignore U1000 unexported, not a struct: ignored
		fieldsInt
	}
	// A struct that embeds FieldsDeepA and FieldsDeepB (built below)
	// reaches FieldsInner twice at depth 2, and FieldsInner's fields
	// cancel out.
	FieldsDeepA struct{ FieldsInner }
	FieldsDeepB struct{ FieldsInner }
	FieldsCycle struct {
		Next *FieldsCycle `json:"next"`
		*FieldsCycleB
	}
	FieldsCycleB struct {
		*FieldsCycle
		Z int
	}
)

// TestJSONFieldsMatchEncodingJSON checks jsonFields against encoding/json:
// the names encoding/json writes for a value of each shape, with every
// embedded pointer set, are exactly the names of jsonFields.
func TestJSONFieldsMatchEncodingJSON(t *testing.T) {
	values := []any{
		FieldsDeep{}, FieldsConflict{}, FieldsTagWins{}, FieldsTagFirst{},
		FieldsEmbeddings{FieldsInner: &FieldsInner{}},
		FieldsCycle{FieldsCycleB: &FieldsCycleB{}},
	}
	tagged := func(name string) reflect.StructField {
		return reflect.StructField{Name: name, Type: reflect.TypeFor[int](), Tag: `json:"t"`}
	}
	embed := func(name string, fields ...reflect.StructField) reflect.StructField {
		return reflect.StructField{Name: name, Type: reflect.StructOf(fields), Anonymous: true}
	}
	twoTagged := reflect.StructOf([]reflect.StructField{
		embed("P", tagged("X")), embed("Q", tagged("Y"), reflect.StructField{Name: "Z", Type: reflect.TypeFor[int]()}),
	})
	twice := reflect.StructOf([]reflect.StructField{
		{Name: "FieldsDeepA", Type: reflect.TypeFor[FieldsDeepA](), Anonymous: true},
		{Name: "FieldsDeepB", Type: reflect.TypeFor[FieldsDeepB](), Anonymous: true},
		{Name: "W", Type: reflect.TypeFor[int]()},
	})
	for _, t := range []reflect.Type{twoTagged, twice} {
		values = append(values, reflect.New(t).Elem().Interface())
	}
	values = append(values, FieldsSymbol{})
	// encoding/json on v2 reads tags with quoted names or options of its
	// own otherwise: jsonFields says it is not sure of those.
	for _, v := range []any{FieldsTags{}, FieldsInline{}, FieldsUnknown{}, FieldsQuotedName{}} {
		if _, plain := jsonFields(reflect.TypeOf(v)); jsonV2 {
			assert.False(t, plain, "%T", v)
		} else {
			assert.True(t, plain, "%T", v)
			values = append(values, v)
		}
	}
	for _, v := range values {
		t.Run(reflect.TypeOf(v).String(), func(t *testing.T) {
			var want []string
			b, err := json.Marshal(v)
			require.NoError(t, err)
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(b, &m))
			for name := range m {
				want = append(want, name)
			}
			var got []string
			fields, plain := jsonFields(reflect.TypeOf(v))
			assert.True(t, plain)
			for _, f := range fields {
				got = append(got, f.name)
			}
			slices.Sort(want)
			slices.Sort(got)
			assert.Equal(t, want, got)
		})
	}
}

// TestPlans checks the plans of a few types: what decodes itself has
// none, pointers are followed, and a type that contains itself refers to
// its own plan.
func TestPlans(t *testing.T) {
	assert.Nil(t, planFor(reflect.TypeFor[json.RawMessage]()))
	assert.Nil(t, planFor(reflect.TypeFor[*json.RawMessage]()))
	assert.Nil(t, planFor(reflect.TypeFor[any]()))
	assert.Nil(t, planFor(reflect.TypeFor[[]int]()))
	assert.Nil(t, planFor(reflect.TypeFor[map[string]any]()))
	assert.Nil(t, planFor(reflect.TypeFor[struct{ hidden int }]()))
	type self struct{ X int }
	p := planFor(reflect.TypeFor[**self]())
	require.NotNil(t, p)
	assert.Same(t, p, planFor(reflect.TypeFor[self]()))
	assert.True(t, p.flat)

	type loop *loop
	assert.Nil(t, planFor(reflect.TypeFor[loop]()))

	c := planFor(reflect.TypeFor[FieldsCycle]())
	require.NotNil(t, c)
	k := c.field([]byte("next"))
	require.GreaterOrEqual(t, k, 0)
	assert.Same(t, c, c.fields[k].plan, "FieldsCycle.Next has FieldsCycle's plan")
	assert.False(t, c.flat)

	m := planFor(reflect.TypeFor[map[int8][]self]())
	require.NotNil(t, m)
	assert.Equal(t, keysInt, m.keys)
	assert.Equal(t, planList, m.elem.kind)
	assert.Equal(t, keysUint, planFor(reflect.TypeFor[map[uint]any]()).keys)
}

// TestPlanManyFields checks a struct with more fields than are looked
// through one by one: names and folded names are found in its maps.
func TestPlanManyFields(t *testing.T) {
	var fields []reflect.StructField
	for i := range 40 {
		name := "F" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		fields = append(fields, reflect.StructField{Name: name, Type: reflect.TypeFor[int](), Tag: reflect.StructTag(`json:"` + strings.ToLower(name) + `"`)})
	}
	typ := reflect.StructOf(fields)
	p := planFor(typ)
	require.NotNil(t, p.byName)
	for i, f := range fields {
		name := []byte(strings.ToLower(f.Name))
		assert.Equal(t, i, p.field(name))
		assert.Equal(t, i, p.keyAt(append(append([]byte(`"`), name...), `":1`...), 1))
		assert.True(t, p.folds(bytes.ToUpper(name)))
	}
	assert.Equal(t, -1, p.field([]byte("FA")))
	assert.False(t, p.folds([]byte("fzz")))

	v := reflect.New(typ)
	b, err := strictInput([]byte(`{"fa":1,"FB":2,"fb":3,"FC":4}`), p, true, nil)
	require.Nil(t, err)
	require.NoError(t, json.Unmarshal(b, v.Interface()))
	assert.Equal(t, int64(1), v.Elem().Field(0).Int())
	assert.Equal(t, int64(3), v.Elem().Field(1).Int())
	assert.Equal(t, int64(0), v.Elem().Field(2).Int())
}

// TestAppendFolded checks that two names have the same folded form
// exactly when bytes.EqualFold holds: every character folds to the same
// form as the others of its orbit, and characters of different orbits
// fold apart.
func TestAppendFolded(t *testing.T) {
	key := func(r rune) string { return string(appendFolded(nil, utf8.AppendRune(nil, r))) }
	for r := rune(0); r < 0x20000; r++ { // no character past these folds
		if r >= 0xd800 && r < 0xe000 {
			continue
		}
		k := key(r)
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if key(f) != k {
				t.Fatalf("%U folds to %q, %U of its orbit to %q", r, k, f, key(f))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	letters := []rune("aAbBkKsSſKΣσςﬅﬆǅǄǆ1_-é")
	for range 100000 {
		a := make([]rune, rng.IntN(4))
		b := make([]rune, len(a)+rng.IntN(2))
		for i := range a {
			a[i] = letters[rng.IntN(len(letters))]
		}
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		x, y := []byte(string(a)), []byte(string(b))
		if same := string(appendFolded(nil, x)) == string(appendFolded(nil, y)); same != bytes.EqualFold(x, y) {
			t.Fatalf("%q and %q: folded alike %v, bytes.EqualFold %v", x, y, same, bytes.EqualFold(x, y))
		}
	}
}

// TestSkipString checks skipString against the scanner on valid strings:
// the same end, and escapes found exactly when there are some.
func TestSkipString(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{`a`, `bcdefgh`, `\"`, `\\`, `\\\"`, `\n`, `\u0041`, `é`, `😀`, `"`, strings.Repeat("x", 40), `\/`}
	for range 20000 {
		var s strings.Builder
		s.WriteByte('"')
		for range rng.IntN(12) {
			p := pieces[rng.IntN(len(pieces))]
			if p == `"` {
				continue
			}
			s.WriteString(p)
		}
		s.WriteString(`"`)
		tail := []string{``, `,"x"`, `}`, ` "\"`}[rng.IntN(4)]
		b := []byte(s.String() + tail)
		wantEnd, wantEscaped, ok := scanString(b, 0)
		require.True(t, ok, "%q", b)
		end, escaped := skipString(b, 0)
		if end != wantEnd || escaped != wantEscaped {
			t.Fatalf("skipString(%q) = %d, %v; scanString: %d, %v", b, end, escaped, wantEnd, wantEscaped)
		}
	}
}

// A call's result is checked as params are: two keys that decode to one
// netip.Addr are a duplicate member.
func TestDecodeResultDecodedMapKeys(t *testing.T) {
	var m map[netip.Addr]int
	err := decodeResult([]byte(`{"::1":1,"0::1":2}`), &m)
	assert.ErrorIs(t, err, ErrDuplicateMember)
	m = nil
	require.NoError(t, decodeResult([]byte(`{"::1":1,"::2":2}`), &m))
	assert.Equal(t, map[netip.Addr]int{netip.MustParseAddr("::1"): 1, netip.MustParseAddr("::2"): 2}, m)
}

// A checker given back to its pool keeps none of the Go keys it decoded
// to compare a map's keys (see decodedKey): reset lets their maps go.
func TestCheckerResetLetsDecodedKeysGo(t *testing.T) {
	var c checker
	root := planFor(reflect.TypeFor[struct {
		Deny map[netip.Addr]bool `json:"deny"`
	}]())
	require.NotNil(t, root)
	require.Nil(t, c.check([]byte(`{"deny":{"::1":true,"::2":false}}`), root))
	c.reset()
	for i, f := range c.frames[:cap(c.frames)] {
		assert.Nil(t, f.keys, "frame %d", i)
	}
}
