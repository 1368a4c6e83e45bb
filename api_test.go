package jsonrpc_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The package's exported API is recorded in api/jsonrpc.txt, one line per
// exported identifier in the style of Go's own api/*.txt files, so that a
// change to the surface shows up as a diff in review. TestAPI computes the
// API from the package's source and compares; -update-api rewrites the file.

var updateAPI = flag.Bool("update-api", false, "rewrite api/jsonrpc.txt from the package's exported API")

// apiFile is the recorded API, relative to the package directory, where
// go test runs its tests.
var apiFile = filepath.Join("api", "jsonrpc.txt")

const (
	apiUpdateCommand = "go test -run TestAPI -update-api ."
	apiCountPrefix   = "# Exported identifiers: "
)

func TestAPI(t *testing.T) {
	pkg := loadAPIPackage(t, ".")
	got, count := apiOf(pkg)
	t.Logf("package %s exports %d identifiers (%d API lines)", pkg.Name(), count, len(got))

	if *updateAPI {
		require.NoError(t, os.MkdirAll(filepath.Dir(apiFile), 0o755))
		require.NoError(t, os.WriteFile(apiFile, formatAPIFile(got, count), 0o644))
		t.Logf("wrote %s", apiFile)
		return
	}

	data, err := os.ReadFile(apiFile)
	require.NoError(t, err, "to create the file, run: %s", apiUpdateCommand)
	want, wantCount, err := parseAPIFile(data)
	require.NoError(t, err, "if the change is deliberate, run: %s", apiUpdateCommand)

	added, removed := diffSorted(got, want)
	if len(added) > 0 || len(removed) > 0 || count != wantCount {
		var msg strings.Builder
		fmt.Fprintf(&msg, "the exported API differs from %s:\n", apiFile)
		for _, l := range removed {
			fmt.Fprintf(&msg, "\t- %s\n", l)
		}
		for _, l := range added {
			fmt.Fprintf(&msg, "\t+ %s\n", l)
		}
		if count != wantCount {
			fmt.Fprintf(&msg, "\texported identifiers: %d in the file's header, %d in the source\n", wantCount, count)
		}
		if len(added) > 0 || len(removed) > 0 {
			fmt.Fprintf(&msg, "(- only in %s, + only in the source: %d removed, %d added)\n", apiFile, len(removed), len(added))
		}
		fmt.Fprintf(&msg, "if the change is deliberate, run: %s", apiUpdateCommand)
		t.Error(msg.String())
	}
}

// formatAPIFile returns the contents of api/jsonrpc.txt: a header of
// comment lines, then the sorted API lines.
func formatAPIFile(lines []string, count int) []byte {
	var b bytes.Buffer
	b.WriteString(`# The exported API of package jsonrpc (the repository root), sorted, in
# the style of Go's api/*.txt files: types are written as the type checker
# sees them (the empty interface as any), parameter names are left out, and
# type parameters are numbered $0, $1, ... in the order they are declared.
# Fields and methods promoted through an unexported embedded field are
# listed on the outer type; those promoted through an exported one are not,
# as the embedded field is. Lines starting with # are comments.
#
# TestAPI (api_test.go) computes the API from the package's non-test
# files in the default build (no -tags, no cgo, no GOEXPERIMENT) and fails
# on any difference with this file. If a change to the API is deliberate,
# update the file from the package directory and commit it with the change:
#
#	` + apiUpdateCommand + `
#
# That rewrites the whole file, this header included (it is written by
# formatAPIFile in api_test.go). The count below is of consts, vars, types,
# funcs, methods (interface methods included) and exported struct fields
# (embedded ones included), each counted once however many lines mention it.
`)
	fmt.Fprintf(&b, "%s%d\n\n", apiCountPrefix, count)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// parseAPIFile returns the sorted API lines of a recorded API file and the
// identifier count in its header. Comment and blank lines are ignored.
func parseAPIFile(data []byte) (lines []string, count int, err error) {
	count = -1
	for l := range strings.Lines(string(data)) {
		l = strings.TrimRight(l, "\r\n")
		switch {
		case strings.HasPrefix(l, apiCountPrefix):
			count, err = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(l, apiCountPrefix)))
			if err != nil {
				return nil, 0, fmt.Errorf("%s: bad count line %q", apiFile, l)
			}
		case l == "" || strings.HasPrefix(l, "#"):
		default:
			lines = append(lines, l)
		}
	}
	if count < 0 {
		return nil, 0, fmt.Errorf("%s: no %q line in the header", apiFile, strings.TrimSpace(apiCountPrefix))
	}
	slices.Sort(lines)
	return lines, count, nil
}

// diffSorted returns the lines only in got and the lines only in want; both
// must be sorted.
func diffSorted(got, want []string) (added, removed []string) {
	for len(got) > 0 || len(want) > 0 {
		switch {
		case len(want) == 0 || len(got) > 0 && got[0] < want[0]:
			added, got = append(added, got[0]), got[1:]
		case len(got) == 0 || want[0] < got[0]:
			removed, want = append(removed, want[0]), want[1:]
		default:
			got, want = got[1:], want[1:]
		}
	}
	return added, removed
}

// loadAPIPackage type-checks the package in dir from the non-test files of
// its default build.
func loadAPIPackage(t *testing.T, dir string) *types.Package {
	t.Helper()
	// go/build picks the files the go command would build, by file name
	// and //go:build line. Tags that depend on how the test was started
	// are cleared, so every run records the same API: no -tags (go/build
	// never sees them anyway), no cgo, no GOEXPERIMENT. GOOS and GOARCH
	// are the host's: the package has no files for one system only, and
	// if it gets some their exported names must match on every system.
	ctxt := build.Default
	ctxt.BuildTags = nil
	ctxt.CgoEnabled = false
	ctxt.ToolTags = slices.DeleteFunc(slices.Clone(ctxt.ToolTags), func(tag string) bool {
		return strings.HasPrefix(tag, "goexperiment.")
	})
	bp, err := ctxt.ImportDir(dir, 0)
	require.NoError(t, err)

	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		files = append(files, f)
	}

	conf := types.Config{Importer: apiImporter(t, fset, dir, bp.Imports), IgnoreFuncBodies: true}
	pkg, err := conf.Check(bp.Name, fset, files, nil)
	require.NoError(t, err)
	return pkg
}

// apiImporter returns an importer for the given imports of the package in
// dir. It reads the compiler's export data, which the go command lists from
// its build cache in a fraction of a second; type-checking net/http and the
// rest from source takes seconds, many more under the race detector. If the
// go command is missing or fails, it falls back to source.
func apiImporter(t *testing.T, fset *token.FileSet, dir string, imports []string) types.Importer {
	t.Helper()
	imports = slices.DeleteFunc(slices.Clone(imports), func(path string) bool {
		return path == "unsafe" || path == "C"
	})
	if len(imports) == 0 {
		return importer.ForCompiler(fset, "gc", nil)
	}
	// go test puts its own go command first on the test's PATH.
	cmd := exec.Command("go", append([]string{"list", "-export", "-f", "{{.ImportPath}}\t{{.Export}}"}, imports...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := bytes.TrimSpace(stderr.Bytes()); len(msg) > 0 {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		t.Logf("go list -export: %v; type-checking the imports from source instead", err)
		return importer.ForCompiler(fset, "source", nil)
	}
	exports := make(map[string]string)
	for l := range strings.Lines(string(out)) {
		path, file, _ := strings.Cut(strings.TrimSpace(l), "\t")
		exports[path] = file
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file := exports[path]
		if file == "" {
			return nil, errors.New("go list -export gave no export data for " + path)
		}
		return os.Open(file)
	})
}

// apiOf returns the sorted API lines of pkg and the number of exported
// identifiers they describe.
func apiOf(pkg *types.Package) (lines []string, count int) {
	w := &apiWriter{pkg: pkg, idents: make(map[string]bool)}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		if !token.IsExported(name) {
			continue
		}
		switch obj := scope.Lookup(name).(type) {
		case *types.Const:
			w.ident("const " + name)
			w.emit("const %s %s", name, w.typ(obj.Type()))
		case *types.Var:
			w.ident("var " + name)
			w.emit("var %s %s", name, w.typ(obj.Type()))
		case *types.Func:
			w.ident("func " + name)
			sig := obj.Type().(*types.Signature)
			w.emit("func %s%s%s", name, w.typeParams(sig.TypeParams()), w.signature(sig))
		case *types.TypeName:
			w.typeName(obj)
		}
	}
	slices.Sort(w.lines)
	return slices.Compact(w.lines), len(w.idents)
}

// apiWriter collects the API lines of one package and the identifiers they
// describe.
type apiWriter struct {
	pkg    *types.Package
	lines  []string
	idents map[string]bool // "kind Name" or "kind Type.Name", each exported identifier once
}

func (w *apiWriter) emit(format string, args ...any) {
	w.lines = append(w.lines, fmt.Sprintf(format, args...))
}

func (w *apiWriter) ident(key string) { w.idents[key] = true }

func (w *apiWriter) typeName(obj *types.TypeName) {
	name := obj.Name()
	w.ident("type " + name)
	if alias, ok := obj.Type().(*types.Alias); ok {
		w.emit("type %s%s = %s", name, w.typeParams(alias.TypeParams()), w.typ(alias.Rhs()))
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok { // a type parameter cannot be declared at package level
		panic(fmt.Sprintf("type %s is a %T", name, obj.Type()))
	}
	decl := "type " + name + w.typeParams(named.TypeParams())
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.structType(decl, named, u)
	case *types.Interface:
		w.interfaceType(name, decl, u)
		return // an interface's methods are its own lines
	default:
		w.emit("%s %s", decl, w.typ(u))
	}
	w.methods(named)
}

// structType emits a struct's exported fields, and those promoted to it
// through unexported embedded fields. A field promoted through an exported
// embedded field is not listed: the embedded field is, and the embedded
// type lists its own.
func (w *apiWriter) structType(decl string, named *types.Named, st *types.Struct) {
	decl += " struct"
	w.emit("%s", decl)
	for f := range st.Fields() {
		if !f.Exported() {
			continue
		}
		w.ident("field " + named.Obj().Name() + "." + f.Name())
		if f.Embedded() {
			w.emit("%s, embedded %s", decl, w.typ(f.Type()))
		} else {
			w.emit("%s, %s %s", decl, f.Name(), w.typ(f.Type()))
		}
	}
	for _, name := range promotedFieldNames(st, nil) {
		obj, index, _ := types.LookupFieldOrMethod(named, false, w.pkg, name)
		f, ok := obj.(*types.Var)
		if !ok || !f.IsField() || !w.promotedThroughUnexported(named, index) {
			continue // shadowed, ambiguous, or listed with an exported embedded field
		}
		w.ident("field " + named.Obj().Name() + "." + f.Name())
		if f.Embedded() {
			w.emit("%s, embedded %s", decl, w.typ(f.Type()))
		} else {
			w.emit("%s, %s %s", decl, f.Name(), w.typ(f.Type()))
		}
	}
}

// promotedFieldNames returns the names of the exported fields of the
// structs embedded, unexported, in st, at any depth.
func promotedFieldNames(st *types.Struct, seen map[*types.Named]bool) []string {
	var names []string
	for f := range st.Fields() {
		if !f.Embedded() || f.Exported() {
			continue
		}
		t := f.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		n, ok := types.Unalias(t).(*types.Named)
		if !ok || seen[n.Origin()] {
			continue
		}
		inner, ok := n.Underlying().(*types.Struct)
		if !ok {
			continue
		}
		if seen == nil {
			seen = make(map[*types.Named]bool)
		}
		seen[n.Origin()] = true
		for g := range inner.Fields() {
			if g.Exported() {
				names = append(names, g.Name())
			}
		}
		names = append(names, promotedFieldNames(inner, seen)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// promotedThroughUnexported reports whether the selection path index from
// named goes only through unexported embedded fields before its last step,
// and has at least one.
func (w *apiWriter) promotedThroughUnexported(named *types.Named, index []int) bool {
	if len(index) < 2 {
		return false
	}
	var t types.Type = named
	for _, i := range index[:len(index)-1] {
		if p, ok := t.Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		st, ok := t.Underlying().(*types.Struct)
		if !ok {
			return false
		}
		f := st.Field(i)
		if f.Exported() {
			return false
		}
		t = f.Type()
	}
	return true
}

// methods emits the exported methods declared on named, and those promoted
// to it through unexported embedded fields, with the receiver they are
// called on: T if they are in T's method set, otherwise *T.
func (w *apiWriter) methods(named *types.Named) {
	typeName := named.Obj().Name()
	for m := range named.Methods() {
		if !m.Exported() {
			continue
		}
		w.ident("method " + typeName + "." + m.Name())
		sig := m.Type().(*types.Signature)
		w.emit("method (%s) %s%s", w.typ(sig.Recv().Type()), m.Name(), w.signature(sig))
	}
	var recv types.Type = named
	if tparams := named.TypeParams(); tparams.Len() > 0 {
		// Written as the declared methods' receivers are: T[$0, ...].
		args := make([]types.Type, tparams.Len())
		for i := range args {
			args[i] = tparams.At(i)
		}
		recv = w.instance(named, args)
	}
	done := make(map[string]bool)
	for _, r := range []types.Type{recv, types.NewPointer(recv)} {
		mset := types.NewMethodSet(r)
		for sel := range mset.Methods() {
			m := sel.Obj()
			if !m.Exported() || done[m.Name()] || !w.promotedThroughUnexported(named, sel.Index()) {
				continue
			}
			done[m.Name()] = true
			w.ident("method " + typeName + "." + m.Name())
			w.emit("method (%s) %s%s", w.typ(r), m.Name(), w.signature(sel.Type().(*types.Signature)))
		}
	}
}

// instance returns named written with the given type arguments; it only
// needs to print, so an error (which cannot happen for its own type
// parameters) leaves named as it is.
func (w *apiWriter) instance(named *types.Named, args []types.Type) types.Type {
	t, err := types.Instantiate(nil, named, args, false)
	if err != nil {
		return named
	}
	return t
}

// interfaceType emits an interface as Go's api files do: a line per
// exported method, then the sorted method names on one line, so that adding
// a method shows up twice. An interface with unexported methods can only be
// implemented in this package; it gets a line saying so instead of the
// names. A constraint with type terms is written out whole.
func (w *apiWriter) interfaceType(name, decl string, it *types.Interface) {
	idecl := decl + " interface"
	var names []string
	complete := true
	for m := range it.Methods() {
		if !m.Exported() {
			complete = false
			continue
		}
		names = append(names, m.Name())
		w.ident("method " + name + "." + m.Name())
		w.emit("%s, %s%s", idecl, m.Name(), w.signature(m.Type().(*types.Signature)))
	}
	switch {
	case !it.IsMethodSet():
		w.emit("%s { %s }", idecl, strings.Join(w.interfaceElems(it), "; "))
	case !complete:
		w.emit("%s, unexported methods", idecl)
	case len(names) == 0:
		w.emit("%s {}", idecl)
	default:
		slices.Sort(names)
		w.emit("%s { %s }", idecl, strings.Join(names, ", "))
	}
}

func (w *apiWriter) typeParams(list *types.TypeParamList) string {
	if list.Len() == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := range list.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		tp := list.At(i)
		w.writeType(&b, tp)
		b.WriteByte(' ')
		w.writeType(&b, tp.Constraint())
	}
	b.WriteByte(']')
	return b.String()
}

// signature returns a signature without its receiver, type parameters or
// parameter names: "(context.Context, string) error".
func (w *apiWriter) signature(sig *types.Signature) string {
	var b strings.Builder
	w.writeSignature(&b, sig)
	return b.String()
}

func (w *apiWriter) typ(t types.Type) string {
	var b strings.Builder
	w.writeType(&b, t)
	return b.String()
}

func (w *apiWriter) writeSignature(b *strings.Builder, sig *types.Signature) {
	w.writeTuple(b, sig.Params(), sig.Variadic())
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		b.WriteByte(' ')
		w.writeType(b, res.At(0).Type())
	default:
		b.WriteByte(' ')
		w.writeTuple(b, res, false)
	}
}

func (w *apiWriter) writeTuple(b *strings.Builder, tuple *types.Tuple, variadic bool) {
	b.WriteByte('(')
	for i := range tuple.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		t := tuple.At(i).Type()
		if variadic && i == tuple.Len()-1 {
			b.WriteString("...")
			if s, ok := t.(*types.Slice); ok {
				t = s.Elem()
			}
		}
		w.writeType(b, t)
	}
	b.WriteByte(')')
}

// writeType writes t as Go source would, qualifying other packages' names
// by package name, writing type parameters as $0, $1, ... and the empty
// interface as any however it was spelled.
func (w *apiWriter) writeType(b *strings.Builder, t types.Type) {
	switch t := t.(type) {
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			b.WriteString("unsafe.")
		}
		b.WriteString(t.Name())
	case *types.Pointer:
		b.WriteByte('*')
		w.writeType(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		w.writeType(b, t.Elem())
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		w.writeType(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		w.writeType(b, t.Key())
		b.WriteByte(']')
		w.writeType(b, t.Elem())
	case *types.Chan:
		switch t.Dir() {
		case types.SendRecv:
			b.WriteString("chan ")
			if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
				b.WriteByte('(')
				w.writeType(b, c)
				b.WriteByte(')')
				return
			}
		case types.SendOnly:
			b.WriteString("chan<- ")
		case types.RecvOnly:
			b.WriteString("<-chan ")
		}
		w.writeType(b, t.Elem())
	case *types.Signature:
		b.WriteString("func")
		w.writeSignature(b, t)
	case *types.Struct:
		b.WriteString("struct{")
		for i := range t.NumFields() {
			if i > 0 {
				b.WriteString("; ")
			}
			f := t.Field(i)
			if !f.Embedded() {
				b.WriteString(f.Name())
				b.WriteByte(' ')
			}
			w.writeType(b, f.Type())
			if tag := t.Tag(i); tag != "" {
				b.WriteByte(' ')
				b.WriteString(strconv.Quote(tag))
			}
		}
		b.WriteByte('}')
	case *types.Interface:
		w.writeInterface(b, t)
	case *types.Union:
		for i := range t.Len() {
			if i > 0 {
				b.WriteString(" | ")
			}
			term := t.Term(i)
			if term.Tilde() {
				b.WriteByte('~')
			}
			w.writeType(b, term.Type())
		}
	case *types.TypeParam:
		fmt.Fprintf(b, "$%d", t.Index())
	case *types.Alias:
		if t.Obj().Pkg() == nil && t.Obj().Name() == "any" {
			b.WriteString("any")
			return
		}
		w.writeTypeName(b, t.Obj(), t.TypeArgs())
	case *types.Named:
		w.writeTypeName(b, t.Obj(), t.TypeArgs())
	default:
		// Tuples only appear in signatures, written above.
		panic(fmt.Sprintf("unexpected type %T: %v", t, t))
	}
}

func (w *apiWriter) writeInterface(b *strings.Builder, t *types.Interface) {
	if t.Empty() && t.NumEmbeddeds() == 0 {
		b.WriteString("any")
		return
	}
	if t.IsImplicit() { // a constraint written as [T ~int | ~string]
		w.writeType(b, t.EmbeddedType(0))
		return
	}
	b.WriteString("interface{ ")
	b.WriteString(strings.Join(w.interfaceElems(t), "; "))
	b.WriteString(" }")
}

// interfaceElems returns an interface's explicit methods, sorted, then its
// embedded types and type terms in the order they are written.
func (w *apiWriter) interfaceElems(t *types.Interface) []string {
	var elems []string
	for m := range t.ExplicitMethods() {
		elems = append(elems, m.Name()+w.signature(m.Type().(*types.Signature)))
	}
	slices.Sort(elems)
	for e := range t.EmbeddedTypes() {
		elems = append(elems, w.typ(e))
	}
	return elems
}

func (w *apiWriter) writeTypeName(b *strings.Builder, obj *types.TypeName, args *types.TypeList) {
	if pkg := obj.Pkg(); pkg != nil && pkg != w.pkg {
		b.WriteString(pkg.Name())
		b.WriteByte('.')
	}
	b.WriteString(obj.Name())
	if args.Len() > 0 {
		b.WriteByte('[')
		for i := range args.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			w.writeType(b, args.At(i))
		}
		b.WriteByte(']')
	}
}
