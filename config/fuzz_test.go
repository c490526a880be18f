package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that a config it accepts validates again.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"edge.yaml", "minimal.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "examples", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add(lines(baseLines()...))
	f.Add("cells: [{id: 1, url: &u \"http://a\", legacy: true, id_ranges: [\"1-2\"]}, {id: 2, url: *u}]\n")
	f.Add("a: &a [*a]\n")
	f.Add("<<: {cells: []}\n")
	f.Fuzz(func(t *testing.T, src string) {
		c, err := Parse([]byte(src), "fuzz.yaml", t.TempDir())
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Errorf("Validate after a successful Parse: %v", err)
		}
	})
}
