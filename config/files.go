package config

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// files resolves the paths a config names (relative to the config file's directory) and reads
// them, reporting an unreadable file at the field that names it. Messages name the file, never
// what it holds.
type files struct {
	baseDir string
	ch      *checker
}

// resolve makes *name absolute; an empty name stays empty.
func (f *files) resolve(name *string) {
	if *name == "" {
		return
	}
	p := *name
	if !filepath.IsAbs(p) {
		p = filepath.Join(f.baseDir, p)
	}
	*name = filepath.Clean(p)
}

// read resolves *name and returns the file's contents; nil when name is empty or unreadable.
func (f *files) read(path string, name *string) []byte {
	if *name == "" {
		return nil
	}
	given := *name
	f.resolve(name)
	data, err := os.ReadFile(*name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.ch.add(path, "file %s does not exist%s", *name, relativeNote(given))
		return nil
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		f.ch.add(path, "cannot read %s: %v", *name, err)
		return nil
	case len(bytes.TrimSpace(data)) == 0:
		f.ch.add(path, "file %s is empty", *name)
		return nil
	}
	return data
}

// secret reads a secret file: its raw contents, surrounding whitespace trimmed.
func (f *files) secret(path string, name *string) []byte {
	return bytes.TrimSpace(f.read(path, name))
}

// key reads a key file: an HMAC secret is trimmed like any secret, a PEM file is kept as it is.
func (f *files) key(path string, k *KeyRef) {
	if k.IsHMAC() {
		k.PEM = f.secret(path, &k.File)
	} else {
		k.PEM = f.read(path, &k.File)
	}
}

func (f *files) keys(path string, keys []KeyRef) {
	for i := range keys {
		f.key(index(path, i)+".file", &keys[i])
	}
}

func relativeNote(given string) string {
	if filepath.IsAbs(given) {
		return ""
	}
	return " (" + given + " is relative to the config file's directory)"
}

// checkSecret reports an HMAC secret that is missing (when required) or too short. file is the
// configured path, secret what was read from it (or set by code).
func checkSecret(ch *checker, path, file string, secret []byte, required bool, why string) {
	switch {
	case file == "" && len(secret) == 0:
		if required {
			ch.add(path, "required%s", why)
		}
	case len(secret) == 0:
		// unreadable: already reported
	case len(secret) < minSecret:
		ch.add(path, "the secret must hold at least %d bytes (surrounding whitespace is not counted)", minSecret)
	}
}
