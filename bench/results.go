package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// WriteJSON writes v, indented, to path; ">=" stays ">=" (not \u003e=) so goals read well in a
// diff of two runs.
func WriteJSON(path string, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteResults puts a command's results into dir (made if missing), each run in a directory of
// its own so that two runs compare file by file: name.md, and name.json from v unless v is nil.
func WriteResults(dir, name string, v any, markdown string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	if v != nil {
		if err := WriteJSON(filepath.Join(dir, name+".json"), v); err != nil {
			return err
		}
	}
	path := filepath.Join(dir, name+".md")
	if err := os.WriteFile(path, []byte(markdown), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
