package tokens

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

type vector struct {
	token  string
	prefix string
	random [16]byte
	keys   Keys
}

func seq16() [16]byte {
	var r [16]byte
	for i := range r {
		r[i] = byte(i)
	}
	return r
}

// specVectors are the test vectors of spec/tokens.md §1.
func specVectors() []vector {
	return []vector{
		{"glrt-t2_AAECAwQFBgcICQoLDA0OD2M6MgpnOnlhCm86MQp1OjE2EQ.01.1a0uul4cy", "glrt-t2_", seq16(),
			Keys{Cell: 2, Group: 1234, Organization: 1, User: 42, Present: KeyCell | KeyGroup | KeyOrganization | KeyUser}},
		{"glpat-AAECAwQFBgcICQoLDA0OD2M6MQpvOjEKdToxNgw.01.130ncaeak", "glpat-", seq16(),
			Keys{Cell: 1, Organization: 1, User: 42, Present: KeyCell | KeyOrganization | KeyUser}},
		{"glrt-t3_AAECAwQFBgcICQoLDA0OD2M6MwpvOjUKcDpycwp1OjcQ.01.180xv8zww", "glrt-t3_", seq16(),
			Keys{Cell: 3, Organization: 5, Project: 1000, User: 7, Present: KeyCell | KeyOrganization | KeyProject | KeyUser}},
		// The fourth vector's random part is not 00..0f (the spec table says so for all four,
		// but its b64 decodes to these bytes); no prefix, no cell.
		{"EL25d_AKXDUtqLnIQHEpkG86MQM.01.0r1ajj2i3", "",
			[16]byte{0x10, 0xbd, 0xb9, 0x77, 0xf0, 0x0a, 0x5c, 0x35, 0x2d, 0xa8, 0xb9, 0xc8, 0x40, 0x71, 0x29, 0x90},
			Keys{Organization: 1, Present: KeyOrganization}},
	}
}

func TestParseRoutableVectors(t *testing.T) {
	for _, v := range specVectors() {
		t.Run(v.token, func(t *testing.T) {
			got, err := ParseRoutable(v.token)
			if err != nil {
				t.Fatalf("ParseRoutable: got error %v, want nil", err)
			}
			if got.Prefix != v.prefix {
				t.Errorf("prefix: got %q, want %q", got.Prefix, v.prefix)
			}
			if got.Keys != v.keys {
				t.Errorf("keys: got %+v, want %+v", got.Keys, v.keys)
			}
		})
	}
}

func TestMintRoutableVectors(t *testing.T) {
	for _, v := range specVectors() {
		t.Run(v.token, func(t *testing.T) {
			got, err := MintRoutable(v.prefix, v.random, v.keys)
			if err != nil {
				t.Fatalf("MintRoutable: got error %v, want nil", err)
			}
			if got != v.token {
				t.Errorf("MintRoutable: got %q, want %q", got, v.token)
			}
		})
	}
}

func TestParseRoutableNoCell(t *testing.T) {
	got, err := ParseRoutable("EL25d_AKXDUtqLnIQHEpkG86MQM.01.0r1ajj2i3")
	if err != nil {
		t.Fatalf("ParseRoutable: got error %v, want nil", err)
	}
	if got.Keys.Has(KeyCell) {
		t.Errorf("Has(KeyCell): got true, want false")
	}
	if o, ok := got.Keys.Get(KeyOrganization); !ok || o != 1 {
		t.Errorf("Get(KeyOrganization): got %d %v, want 1 true", o, ok)
	}
}

func TestParseRoutableNegative(t *testing.T) {
	v1 := specVectors()[0].token
	body := v1[:len(v1)-7]
	b64 := strings.TrimPrefix(body[:len(body)-6], "glrt-t2_")
	cases := []struct {
		name, token string
		want        notRoutable
	}{
		{"empty", "", reasonEmpty},
		{"crc char changed", v1[:len(v1)-1] + "z", reasonCRC},
		{"crc upper case", v1[:len(v1)-7] + strings.ToUpper(v1[len(v1)-7:]), reasonCRC},
		{"b64 char changed", strings.Replace(v1, "AAEC", "AAED", 1), reasonCRC},
		{"len too big", withCRC(body[:len(body)-2] + "zz"), reasonLength},
		{"len below minimum", withCRC(body[:len(body)-2] + "0q"), reasonLength},
		{"len not base36", withCRC(body[:len(body)-2] + "1-"), reasonLength},
		{"len one more", withCRC(body[:len(body)-2] + "1b"), reasonPayloadLength},
		{"len one less", withCRC(body[:len(body)-2] + "19"), reasonBase64},
		{"len two more", withCRC(body[:len(body)-2] + "1c"), reasonPayloadLength},
		{"version 02", withCRC(strings.Replace(body, ".01.", ".02.", 1)), reasonVersion},
		{"version 1", withCRC(strings.Replace(body, ".01.", ".1.", 1)), reasonVersion},
		{"old unversioned form", withCRC("glrt-t2_" + b64 + ".1a"), reasonVersion},
		{"no dots", withCRC(strings.Repeat("A", 40)), reasonFormat},
		{"legacy 20-char runner token", "glrt-" + "abcdefghij0123456789", reasonTooShort},
		{"legacy 20-char PAT", "glpat-" + "abcdefghij0123456789", reasonTooShort},
		{"legacy 20-char", "abcdefghij0123456789", reasonTooShort},
		{"huge", strings.Repeat("A", 10000), reasonTooLong},
		{"one over max", strings.Repeat("A", maxRoutableLen+1), reasonTooLong},
		{"non-ASCII", strings.Repeat("ü", 30), reasonCRC},
		{"non-ASCII in b64", withCRC("glrt-t2_" + strings.Replace(b64, "AA", "é", 1) + ".01.1a"), reasonBase64},
		{"newline in b64", withCRC("glrt-t2_" + strings.Replace(b64, "AA", "A\n", 1) + ".01.1a"), reasonBase64},
		{"prefix too long", mintRaw(strings.Repeat("p", 21), "c:1\no:1", 7), reasonPrefix},
		{"line without colon", mintRaw("glrt-", "c:2\no1", 6), reasonPayload},
		{"value not base36", mintRaw("glrt-", "c:2\no:1!", 8), reasonPayload},
		{"value upper case", mintRaw("glrt-", "c:2\no:A", 7), reasonPayload},
		{"value empty", mintRaw("glrt-", "c:\no:1", 6), reasonPayload},
		{"value overflows uint64", mintRaw("glrt-", "c:3w5e11264sgsg", 15), reasonPayload},
		{"value too long", mintRaw("glrt-", "c:00000000000001", 16), reasonPayload},
		{"key empty", mintRaw("glrt-", ":2\no:1", 6), reasonPayload},
		{"duplicate key", mintRaw("glrt-", "c:1\nc:2", 7), reasonPayload},
		{"empty line", mintRaw("glrt-", "c:1\n\no:1", 8), reasonPayload},
		{"trailing newline", mintRaw("glrt-", "c:1\no:1\n", 8), reasonPayload},
		{"payload length byte low", mintRaw("glrt-", "c:2\no:1", 6), reasonPayloadLength},
		{"payload length byte high", mintRaw("glrt-", "c:2\no:1", 8), reasonPayloadLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseRoutable(c.token)
			if !errors.Is(err, ErrNotRoutable) {
				t.Fatalf("ParseRoutable: got %+v, %v, want error wrapping ErrNotRoutable", got, err)
			}
			if err != c.want {
				t.Errorf("reason: got %q, want %q", err, c.want)
			}
			if c.token != "" && strings.Contains(err.Error(), c.token) {
				t.Errorf("error %q contains the token", err)
			}
			if got != (Routable{}) {
				t.Errorf("result: got %+v, want zero", got)
			}
		})
	}
}

func TestParseRoutableLenient(t *testing.T) {
	cases := []struct {
		name, token string
		want        Routable
	}{
		{"unknown key skipped", mintRaw("glrt-", "o:1\nx:anything", 14), Routable{"glrt-", Keys{Organization: 1, Present: KeyOrganization}}},
		{"unsorted", mintRaw("glrt-", "o:1\nc:2", 7), Routable{"glrt-", Keys{Cell: 2, Organization: 1, Present: KeyCell | KeyOrganization}}},
		{"runner type", mintRaw("glrt-t3_", "c:1\no:1\nt:3", 11), Routable{"glrt-t3_", Keys{Cell: 1, Organization: 1, RunnerType: 3, Present: KeyCell | KeyOrganization | KeyRunnerType}}},
		{"unknown prefix", mintRaw("acme-", "c:1", 3), Routable{"acme-", Keys{Cell: 1, Present: KeyCell}}},
		{"max uint64", mintRaw("", "c:3w5e11264sgsf", 15), Routable{"", Keys{Cell: math.MaxUint64, Present: KeyCell}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseRoutable(c.token)
			if err != nil {
				t.Fatalf("ParseRoutable: got error %v, want nil", err)
			}
			if got != c.want {
				t.Errorf("ParseRoutable: got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestMintRoutableRoundTrip(t *testing.T) {
	all := Keys{Present: KeyCell | KeyOrganization | KeyGroup | KeyProject | KeyUser | KeyRunnerType}
	all.Cell, all.Organization, all.Group, all.Project, all.User, all.RunnerType =
		math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64
	cases := []struct {
		name   string
		prefix string
		keys   Keys
	}{
		{"all keys max", "glrt-t1_", all},
		{"zero values", "", Keys{Present: KeyCell | KeyOrganization}},
		{"prefix at limit", strings.Repeat("p", 20), Keys{Cell: 7, Present: KeyCell}},
		{"only project", "glrtr-", Keys{Project: 99, Present: KeyProject}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok, err := MintRoutable(c.prefix, [16]byte{1, 2, 3}, c.keys)
			if err != nil {
				t.Fatalf("MintRoutable: got error %v, want nil", err)
			}
			got, err := ParseRoutable(tok)
			if err != nil {
				t.Fatalf("ParseRoutable: got error %v, want nil", err)
			}
			if want := (Routable{c.prefix, c.keys}); got != want {
				t.Errorf("round trip: got %+v, want %+v", got, want)
			}
		})
	}
}

func TestMintRoutableErrors(t *testing.T) {
	cases := []struct {
		name   string
		prefix string
		keys   Keys
	}{
		{"no keys", "glrt-", Keys{}},
		{"value without present bit", "glrt-", Keys{Cell: 1}},
		{"prefix too long", strings.Repeat("p", 21), Keys{Cell: 1, Present: KeyCell}},
		{"prefix with dot", "gl.rt-", Keys{Cell: 1, Present: KeyCell}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if tok, err := MintRoutable(c.prefix, [16]byte{}, c.keys); err == nil {
				t.Errorf("MintRoutable: got %q, want error", tok)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	k := Keys{}.Set(KeyCell, 2).Set(KeyGroup, 1234).Set(KeyOrganization, 1).Set(KeyUser, 42)
	if want := map[string]uint64{"c": 2, "g": 1234, "o": 1, "u": 42}; !reflect.DeepEqual(k.Map(), want) {
		t.Errorf("Map: got %v, want %v", k.Map(), want)
	}
	if !k.Has(KeyCell | KeyUser) {
		t.Errorf("Has(c|u): got false, want true")
	}
	if k.Has(KeyCell | KeyProject) {
		t.Errorf("Has(c|p): got true, want false")
	}
	if v, ok := k.Get(KeyProject); ok || v != 0 {
		t.Errorf("Get(p): got %d %v, want 0 false", v, ok)
	}
	if v, ok := k.Get(KeyCell | KeyUser); ok {
		t.Errorf("Get(c|u): got %d %v, want 0 false", v, ok)
	}
	if got := (Keys{}).Set(KeyCell|KeyUser, 5); got != (Keys{}) {
		t.Errorf("Set(c|u): got %+v, want zero", got)
	}
	if got := len((Keys{}).Map()); got != 0 {
		t.Errorf("Map of no keys: got %d entries, want 0", got)
	}
}
