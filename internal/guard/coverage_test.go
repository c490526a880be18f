package guard

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryGoroutineGuarded holds issue 24's rule: every goroutine edge starts runs under the
// guard (time.AfterFunc and context.AfterFunc callbacks included). A go statement must be go func() { defer x.Recover(...); ... }(), and what a
// WaitGroup or errgroup runs (x.Go(f)) must be y.Func(...) or a func literal that begins with
// defer x.Recover(...); (*Guard).Go("where", f) is the guard itself. Anything else needs a
// "// guard: why it cannot panic" comment on its line or the line above.
func TestEveryGoroutineGuarded(t *testing.T) {
	root := moduleRoot(t)
	for _, v := range unguarded(t, root) {
		t.Error(v)
	}
}

// TestUnguardedIsFound: the check finds what it must, so that a pass means something.
func TestUnguardedIsFound(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import (
	"sync"
	"time"
)

func f(g interface{ Recover(string, func(bool)); Func(string, func()) func(); Go(string, func()) }) {
	var wg sync.WaitGroup
	go work()
	go func() { work() }()
	go func() { defer g.Recover("x", nil); work() }()
	go func() { wg.Wait() }() // guard: only waits
	// guard: only waits
	go func() { wg.Wait() }()
	wg.Go(work)
	wg.Go(func() { work() })
	wg.Go(func() { defer g.Recover("x", nil); work() })
	wg.Go(g.Func("x", work))
	g.Go("x", work)
	time.AfterFunc(time.Second, work)
	time.AfterFunc(time.Second, g.Func("x", work))
	time.AfterFunc(time.Second, work) // guard: only works
	var sf interface {
		DoChan(string, func() (any, error)) <-chan any
	}
	sf.DoChan("k", func() (any, error) { return nil, nil })
	sf.DoChan("k", func() (any, error) { return g2.Call("x", nil) })
}

var g2 interface{ Call(string, func() (any, error)) (any, error) }

func work() {}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := unguarded(t, dir)
	want := []string{"p.go:10: go statement", "p.go:11: go statement", "p.go:16: Go(work)", "p.go:17: Go(func literal)", "p.go:21: AfterFunc", "p.go:27: DoChan"}
	if len(got) != len(want) {
		t.Fatalf("found %d:\n%s\nwant %d", len(got), strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("finding %d: got %q, want it to start with %q", i, got[i], want[i])
		}
	}
}

// unguarded lists, as file:line, the goroutines under root started outside the guard.
func unguarded(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" || skipped(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, check(fset, f, rel)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// skipped: the directories (from the module root) whose code does not run in edge or its agent:
// benchmarks, the demo, test fakes and harnesses, and the guard itself.
func skipped(rel string) bool {
	for _, s := range []string{
		"bench", "cmd/edge-demo", "registry/registrytest", "internal/testkit", "test", "internal/guard",
	} {
		if rel == s || strings.HasPrefix(rel, s+"/") {
			return true
		}
	}
	return false
}

func check(fset *token.FileSet, f *ast.File, rel string) []string {
	commented := map[int]bool{} // lines with a "// guard:" comment
	for _, g := range f.Comments {
		for _, c := range g.List {
			if strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(c.Text, "//")), "guard:") {
				commented[fset.Position(c.Slash).Line] = true
			}
		}
	}
	excused := func(n ast.Node) bool {
		line := fset.Position(n.Pos()).Line
		return commented[line] || commented[line-1]
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			if lit, ok := n.Call.Fun.(*ast.FuncLit); ok && len(n.Call.Args) == 0 && defersRecover(lit) {
				return true
			}
			if !excused(n) {
				out = append(out, fmt.Sprintf("%s:%d: go statement outside the guard (go func() { defer g.Recover(...); ... }(), or // guard: why it cannot panic)",
					rel, fset.Position(n.Pos()).Line))
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if ok && sel.Sel.Name == "DoChan" && len(n.Args) == 2 {
				// singleflight runs f on a goroutine of its own and re-panics there: f must
				// return g.Call(where, ...).
				if !returnsGuardCall(n.Args[1]) && !excused(n) {
					out = append(out, fmt.Sprintf("%s:%d: DoChan outside the guard (func() (any, error) { return g.Call(where, f) })",
						rel, fset.Position(n.Pos()).Line))
				}
				return true
			}
			if ok && sel.Sel.Name == "AfterFunc" && len(n.Args) == 2 {
				// time.AfterFunc and context.AfterFunc run f on a goroutine of their own.
				if !guardedFunc(n.Args[1]) && !excused(n) {
					out = append(out, fmt.Sprintf("%s:%d: AfterFunc outside the guard (g.Func(where, f), or // guard: why it cannot panic)",
						rel, fset.Position(n.Pos()).Line))
				}
				return true
			}
			if !ok || sel.Sel.Name != "Go" {
				return true
			}
			if len(n.Args) == 2 {
				if lit, ok := n.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					return true // (*Guard).Go("where", f)
				}
			}
			if len(n.Args) != 1 || guardedFunc(n.Args[0]) || excused(n) {
				return true
			}
			what := "func literal"
			if _, ok := n.Args[0].(*ast.FuncLit); !ok {
				what = exprName(n.Args[0])
			}
			out = append(out, fmt.Sprintf("%s:%d: Go(%s) outside the guard (g.Func(where, f), a func literal that begins with defer g.Recover(...), or // guard: why it cannot panic)",
				rel, fset.Position(n.Pos()).Line, what))
		}
		return true
	})
	return out
}

// returnsGuardCall: a func literal whose one statement returns y.Call(...).
func returnsGuardCall(e ast.Expr) bool {
	lit, ok := e.(*ast.FuncLit)
	if !ok || len(lit.Body.List) != 1 {
		return false
	}
	ret, ok := lit.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return false
	}
	call, ok := ret.Results[0].(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Call"
}

// guardedFunc: y.Func(...), or a func literal that begins with defer x.Recover(...).
func guardedFunc(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.CallExpr:
		sel, ok := e.Fun.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Func"
	case *ast.FuncLit:
		return defersRecover(e)
	}
	return false
}

func defersRecover(lit *ast.FuncLit) bool {
	if len(lit.Body.List) == 0 {
		return false
	}
	d, ok := lit.Body.List[0].(*ast.DeferStmt)
	if !ok {
		return false
	}
	sel, ok := d.Call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Recover"
}

// exprName names an argument for the message: its source form when it is short.
func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprName(e.X) + "." + e.Sel.Name
	}
	return "an expression"
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
